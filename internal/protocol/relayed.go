package protocol

import "encoding/json"

// Items another server wrote. A gateway lists an upstream's prompts,
// resources and resource templates as the upstream wrote them, members
// this package does not model (_meta, icons, and those of later
// versions of the schema) included: such an item carries its whole JSON
// object in Raw, which is what is sent. Its other fields hold the
// members the server routes by (a prompt's name as listed, a URI) and
// must agree with Raw.

// MarshalJSON writes Raw when it is set.
func (p Prompt) MarshalJSON() ([]byte, error) {
	if p.Raw != nil {
		return p.Raw, nil
	}
	type plain Prompt
	return json.Marshal(plain(p))
}

// MarshalJSON writes Raw when it is set.
func (r Resource) MarshalJSON() ([]byte, error) {
	if r.Raw != nil {
		return r.Raw, nil
	}
	type plain Resource
	return json.Marshal(plain(r))
}

// MarshalJSON writes Raw when it is set.
func (t ResourceTemplate) MarshalJSON() ([]byte, error) {
	if t.Raw != nil {
		return t.Raw, nil
	}
	type plain ResourceTemplate
	return json.Marshal(plain(t))
}
