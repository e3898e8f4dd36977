package auth

import "strings"

// maxTokenBytes bounds a bearer token. Real JWTs are a few KiB; the
// server's header limit is the outer bound, this one keeps a huge token
// from reaching the JWT parser.
const maxTokenBytes = 16 << 10

// BearerToken extracts the token of an Authorization header (RFC 6750
// §2.1): the scheme "Bearer" in any case, one or more spaces, then a
// b64token (letters, digits, "-._~+/", then any "="). values are all the
// request's Authorization headers.
//
// No header: ("", nil), the caller answers with a challenge and no error
// code. Several headers, another scheme or a malformed token: a 401
// invalid_request Failure whose description says which.
func BearerToken(values []string) (string, *Failure) {
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", unauthorized(CodeInvalidRequest, "send one Authorization header, not several")
	}
	h := values[0]
	scheme, rest, found := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		if h == "" {
			return "", unauthorized(CodeInvalidRequest, "the Authorization header is empty")
		}
		return "", unauthorized(CodeInvalidRequest, "use the Bearer scheme: Authorization: Bearer <token>")
	}
	token := strings.TrimLeft(rest, " ")
	switch {
	case !found || token == "":
		return "", unauthorized(CodeInvalidRequest, "the Bearer scheme carries no token")
	case len(token) > maxTokenBytes:
		return "", unauthorized(CodeInvalidRequest, "the bearer token is longer than 16 KiB")
	case !isB64Token(token):
		return "", unauthorized(CodeInvalidRequest, "the bearer token has characters RFC 6750 does not allow")
	}
	return token, nil
}

// isB64Token reports whether s is 1*( ALPHA / DIGIT / "-" / "." / "_" /
// "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			break
		}
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}
