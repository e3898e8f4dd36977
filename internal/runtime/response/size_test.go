package response_test

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"

	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
)

// TestINV_MCP_RESP_003_SizeLimit: for any data, error and valid limits the
// encoded result fits MaxResponseBytes. The same runs check
// INV-MCP-RESP-004 as a property: metadata.truncated is true exactly when
// the data (or error) differs from what unlimited limits produce.
func TestINV_MCP_RESP_003_SizeLimit(t *testing.T) {
	s := compileEnvelopeSchema(t)
	t.Run("success", rapid.MakeCheck(func(t *rapid.T) {
		data := genValue(t, 4)
		l, meta := genLimits(t), genMeta(t)
		r, err := response.Success(data, meta, l)
		if err != nil {
			t.Fatal(err)
		}
		env, size := checkResult(t, s, r)
		if size > l.MaxResponseBytes {
			t.Fatalf("%d bytes > maxResponseBytes %d", size, l.MaxResponseBytes)
		}
		ref, err := response.Success(data, meta, unlimited(l.TruncationSuffix))
		if err != nil {
			t.Fatal(err)
		}
		full, _ := checkResult(t, nil, ref)
		if full.truncated() {
			t.Fatal("unlimited result is truncated")
		}
		if cut := !bytes.Equal(env.Data, full.Data); env.truncated() != cut {
			t.Fatalf("truncated %v, but data changed: %v\n%s\n%s", env.truncated(), cut, env.Data, full.Data)
		}
	}))
	t.Run("failure", rapid.MakeCheck(func(t *rapid.T) {
		e := genError(t)
		l, meta := genLimits(t), genMeta(t)
		env, size := checkResult(t, s, response.Failure(e, meta, l))
		if size > l.MaxResponseBytes {
			t.Fatalf("%d bytes > maxResponseBytes %d", size, l.MaxResponseBytes)
		}
		full, _ := checkResult(t, s, response.Failure(e, meta, unlimited(l.TruncationSuffix)))
		want := full.truncated() || !bytes.Equal(env.Error, full.Error)
		if env.truncated() != want {
			t.Fatalf("truncated %v, want %v\n%s\n%s", env.truncated(), want, env.Error, full.Error)
		}
	}))
}
