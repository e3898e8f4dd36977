package protocol

// subscriptions/listen (basic/patterns/subscriptions; schema/2026-07-28,
// SubscriptionsListenRequest): a modern client's long-lived stream of the
// notifications it asked for. Every message on the stream names the
// listen request in _meta (MetaSubscriptionID), so the encoders below take
// that id and write it verbatim, string or number.

// SubscriptionFilter is the notifications a listen asks for and, in the
// acknowledgement, those the server honours.
type SubscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// ListenParams are the params of subscriptions/listen; Notifications is
// required.
type ListenParams struct {
	Notifications *SubscriptionFilter `json:"notifications"`
}

// AppendListenNotification appends the notification method for the listen
// request sub: {"jsonrpc":"2.0","method":M,"params":{"_meta":{subscriptionId:sub},MEMBERS}}.
// members are the params' other members, already encoded and without
// braces (`"uri":"…"`), or empty.
func AppendListenNotification(dst []byte, method string, sub ID, members []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":`...)
	dst = AppendString(dst, method)
	dst = append(dst, `,"params":{"_meta":{"`+MetaSubscriptionID+`":`...)
	dst = appendID(dst, sub)
	dst = append(dst, '}')
	if len(members) > 0 {
		dst = append(dst, ',')
		dst = append(dst, members...)
	}
	return append(dst, "}}"...)
}

// AppendListenEnd appends the response that ends the listen request sub
// gracefully (basic/patterns/subscriptions, "Graceful Closure"): a
// complete result whose _meta names the subscription, and the server's
// serverInfo (its JSON; empty: none), as every modern result does.
func AppendListenEnd(dst []byte, sub ID, serverInfo []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, sub)
	dst = append(dst, `,"result":{"resultType":"`+ResultComplete+`","_meta":{"`+MetaSubscriptionID+`":`...)
	dst = appendID(dst, sub)
	if len(serverInfo) > 0 {
		dst = append(dst, `,"`+MetaServerInfo+`":`...)
		dst = append(dst, serverInfo...)
	}
	return append(dst, "}}}"...)
}
