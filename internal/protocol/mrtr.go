package protocol

import (
	"encoding/json"
	"fmt"
)

// Multi-round-trip requests (basic/patterns/mrtr; schema/2026-07-28,
// InputRequiredResult): tools/call, prompts/get and resources/read may
// answer with the input the server needs from the client — a request of
// the client's own (elicitation, sampling, roots) under a key — and an
// opaque requestState; the client retries the same request with its
// answers under the same keys, and the state.

// InputRequest is one thing the server asks of the client: a request
// the client answers itself, as if the server had sent it.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// InputRequiredResult is the result of a round that needs the client's
// input; AppendModernResult gives it resultType input_required.
type InputRequiredResult struct {
	InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
	RequestState  string                  `json:"requestState,omitempty"`
}

// Round is what a retry carries besides the request's own params.
type Round struct {
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	RequestState   *string                    `json:"requestState"`
}

// DecodeRound reads the round members of params (a modern request's
// scan, ScanModern, says whether there are any, so that a first round
// pays nothing for them): inputResponses (an
// object of the client's results, each an object) and requestState (a
// string). A params without them is a first round.
func DecodeRound(params json.RawMessage) (Round, *Error) {
	var r Round
	if len(params) == 0 {
		return r, nil
	}
	keys := [...]string{"inputResponses", "requestState"}
	var raw [2]json.RawMessage
	if err := LookupMembers(params, keys[:], raw[:]); err != nil {
		return r, Errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	if len(raw[0]) > 0 && string(raw[0]) != "null" {
		if err := json.Unmarshal(raw[0], &r.InputResponses); err != nil {
			return r, Errorf(CodeInvalidParams, "invalid params: inputResponses must be an object of the client's results, by key")
		}
		for k, v := range r.InputResponses {
			if len(v) == 0 || v[0] != '{' {
				return r, Errorf(CodeInvalidParams, "invalid params: inputResponses[%q] must be an object, the client's result", clip(k))
			}
		}
	}
	if len(raw[1]) > 0 && string(raw[1]) != "null" {
		var s string
		if err := json.Unmarshal(raw[1], &s); err != nil {
			return r, Errorf(CodeInvalidParams, "invalid params: requestState must be the string the server sent")
		}
		r.RequestState = &s
	}
	return r, nil
}

// Has reports whether c declares the client capability name
// (elicitation, sampling or roots; InputCapability names the one a
// request needs).
func (c ClientCapabilities) Has(name string) bool {
	switch name {
	case "elicitation":
		return c.Elicitation != nil
	case "sampling":
		return c.Sampling != nil
	case "roots":
		return c.Roots != nil
	}
	return false
}

// InputCapability is the client capability an input request of method
// needs (basic/patterns/mrtr: a server must not ask for what the client
// did not declare), or an error for a method that is not an input
// request.
func InputCapability(method string) (string, error) {
	switch method {
	case MethodElicitationCreate:
		return "elicitation", nil
	case MethodSamplingCreateMessage:
		return "sampling", nil
	case MethodRootsList:
		return "roots", nil
	}
	return "", fmt.Errorf("%q is not a request a server may ask of the client", method)
}
