package idempotency

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/seal"
)

// capture buffers a handler's response, so it can be stored before the client sees it.
type capture struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newCapture() *capture { return &capture{header: http.Header{}} }

func (c *capture) Header() http.Header { return c.header }

func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.body.Write(p)
}

func (c *capture) statusOrOK() int {
	if c.status == 0 {
		return http.StatusOK
	}
	return c.status
}

// storedResponse is what is sealed: the status, the allow-listed headers and the body.
type storedResponse struct {
	Status int                 `json:"s"`
	Header map[string][]string `json:"h,omitempty"`
	Body   []byte              `json:"b,omitempty"`
}

// defaultStoredHeaders are stored for every route; a route adds its own (Route.StoreHeaders).
var defaultStoredHeaders = []string{"Content-Type", "Location"}

func (c *capture) stored(allowed []string) storedResponse {
	s := storedResponse{Status: c.statusOrOK(), Body: c.body.Bytes()}
	for _, name := range allowed {
		if v := c.header.Values(name); len(v) > 0 {
			if s.Header == nil {
				s.Header = map[string][]string{}
			}
			s.Header[http.CanonicalHeaderKey(name)] = v
		}
	}
	return s
}

// writeTo sends the handler's own response to the client.
func (c *capture) writeTo(w http.ResponseWriter) {
	for name, v := range c.header {
		w.Header()[name] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(c.body.Len()))
	w.WriteHeader(c.statusOrOK())
	_, _ = w.Write(c.body.Bytes())
}

// replay sends a stored response, marked as a replay.
func (s storedResponse) replay(w http.ResponseWriter) {
	for name, v := range s.Header {
		w.Header()[name] = v
	}
	w.Header().Set(ReplayedHeader, "true")
	w.Header().Set("Content-Length", strconv.Itoa(len(s.Body)))
	w.WriteHeader(s.Status)
	_, _ = w.Write(s.Body)
}

func (s storedResponse) encode() []byte {
	b, _ := json.Marshal(s) // ints, strings and bytes always encode
	return b
}

func decodeStored(b []byte) (storedResponse, error) {
	var s storedResponse
	err := json.Unmarshal(b, &s)
	return s, err
}

// sealContext binds a sealed response to its record: moved to another row, it does not open.
func sealContext(scopeHash, keyHash string) []byte {
	return []byte("replayctl.api-response\x1f" + scopeHash + "\x1f" + keyHash)
}

// openStored opens a record's sealed response with kr.
func openStored(kr *seal.Keyring, rec apikey.Record) (storedResponse, error) {
	plain, err := kr.Open(rec.ResponseKeyID, rec.ResponseSealed, sealContext(rec.ScopeHash, rec.KeyHash))
	if err != nil {
		return storedResponse{}, err
	}
	return decodeStored(plain)
}
