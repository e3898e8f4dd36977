package protocol

import "encoding/json"

// Content types of tool results and prompt messages.
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResource     = "resource"
	ContentResourceLink = "resource_link"
)

// Annotations hint how a client should use a content block or resource.
type Annotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

// Content is one content block. Which members apply depends on Type; the
// constructors below build valid blocks and MarshalJSON always writes the
// members the schema requires for that type (an empty text is still "text":"").
type Content struct {
	Type        string            `json:"type"`
	Text        string            `json:"text,omitempty"`
	Data        string            `json:"data,omitempty"` // base64, image and audio
	MimeType    string            `json:"mimeType,omitempty"`
	Resource    *ResourceContents `json:"resource,omitempty"`
	URI         string            `json:"uri,omitempty"` // resource_link
	Name        string            `json:"name,omitempty"`
	Description string            `json:"description,omitempty"`
	Annotations *Annotations      `json:"annotations,omitempty"`
}

// TextContent returns a text block.
func TextContent(text string) Content { return Content{Type: ContentText, Text: text} }

// ImageContent returns an image block; data is base64.
func ImageContent(data, mimeType string) Content {
	return Content{Type: ContentImage, Data: data, MimeType: mimeType}
}

// AudioContent returns an audio block; data is base64.
func AudioContent(data, mimeType string) Content {
	return Content{Type: ContentAudio, Data: data, MimeType: mimeType}
}

// EmbeddedResource returns a resource block.
func EmbeddedResource(rc ResourceContents) Content {
	return Content{Type: ContentResource, Resource: &rc}
}

// MarshalJSON writes required members even when empty.
func (c Content) MarshalJSON() ([]byte, error) {
	type text struct {
		Type        string       `json:"type"`
		Text        string       `json:"text"`
		Annotations *Annotations `json:"annotations,omitempty"`
	}
	type media struct {
		Type        string       `json:"type"`
		Data        string       `json:"data"`
		MimeType    string       `json:"mimeType"`
		Annotations *Annotations `json:"annotations,omitempty"`
	}
	type link struct {
		Type        string       `json:"type"`
		URI         string       `json:"uri"`
		Name        string       `json:"name"`
		Description string       `json:"description,omitempty"`
		MimeType    string       `json:"mimeType,omitempty"`
		Annotations *Annotations `json:"annotations,omitempty"`
	}
	type embedded struct {
		Type        string            `json:"type"`
		Resource    *ResourceContents `json:"resource"`
		Annotations *Annotations      `json:"annotations,omitempty"`
	}
	switch c.Type {
	case ContentText:
		return json.Marshal(text{c.Type, c.Text, c.Annotations})
	case ContentImage, ContentAudio:
		return json.Marshal(media{c.Type, c.Data, c.MimeType, c.Annotations})
	case ContentResourceLink:
		return json.Marshal(link{c.Type, c.URI, c.Name, c.Description, c.MimeType, c.Annotations})
	case ContentResource:
		return json.Marshal(embedded{c.Type, c.Resource, c.Annotations})
	}
	type plain Content
	return json.Marshal(plain(c))
}

// ResourceContents is the content of a resource: exactly one of Text or
// Blob (base64) is meaningful; IsBlob says which.
type ResourceContents struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"-"`
	Blob     string `json:"-"`
	IsBlob   bool   `json:"-"`
}

// MarshalJSON writes "text" or "blob", always one of them.
func (r ResourceContents) MarshalJSON() ([]byte, error) {
	if r.IsBlob {
		return json.Marshal(struct {
			URI      string `json:"uri"`
			MimeType string `json:"mimeType,omitempty"`
			Blob     string `json:"blob"`
		}{r.URI, r.MimeType, r.Blob})
	}
	return json.Marshal(struct {
		URI      string `json:"uri"`
		MimeType string `json:"mimeType,omitempty"`
		Text     string `json:"text"`
	}{r.URI, r.MimeType, r.Text})
}

// UnmarshalJSON reads either form.
func (r *ResourceContents) UnmarshalJSON(b []byte) error {
	var w struct {
		URI      string  `json:"uri"`
		MimeType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     *string `json:"blob"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = ResourceContents{URI: w.URI, MimeType: w.MimeType}
	if w.Blob != nil {
		r.Blob, r.IsBlob = *w.Blob, true
	} else if w.Text != nil {
		r.Text = *w.Text
	}
	return nil
}
