package response

// WireSize exposes wireSize, so the tests can hold it to the real encoding.
func WireSize(env []byte, isError bool) int { return wireSize(env, isError) }
