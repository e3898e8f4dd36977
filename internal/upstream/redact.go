package upstream

import (
	"net/url"
	"strings"
)

// RedactedValue stands for a header value the admin API does not show.
// Sent back in an update, it means "keep the stored value", so a client
// can GET a server, change one field and PUT it back.
const RedactedValue = "[redacted]"

// RedactURL is raw without what may be a credential: the password of its
// user info and its query string. It is what logs and messages show of an
// upstream's URL.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.RawQuery != "" {
		u.RawQuery = "..."
	}
	u.Fragment, u.RawFragment = "", ""
	return u.Redacted()
}

// scrubURL replaces raw, in msg, by RedactURL(raw), and any remaining
// occurrence of its query string or user info (an error may quote the URL
// escaped, or only in part) by "...".
func scrubURL(msg, raw string) string {
	if raw == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, raw, RedactURL(raw))
	u, err := url.Parse(raw)
	if err != nil {
		return msg
	}
	for _, secret := range []string{u.RawQuery, u.Query().Encode(), userinfo(u)} {
		if len(secret) >= 3 { // "..." itself, or a one-letter query, is no secret worth a garbled message
			msg = strings.ReplaceAll(msg, secret, "...")
		}
	}
	return msg
}

func userinfo(u *url.URL) string {
	if u.User == nil {
		return ""
	}
	return u.User.String()
}
