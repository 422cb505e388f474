// Package problem writes the HTTP API's JSON answers and its RFC 9457
// problem details.
package problem

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/catalogsync/catalogsync/internal/truncate"
)

// Media types of the answers.
const (
	JSONType    = "application/json"
	ProblemType = "application/problem+json"
)

// Problem is an RFC 9457 problem details object. Type is always
// "about:blank": the status says what kind of problem it is and Detail
// says what went wrong, so clients need no catalogue of problem types.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// Write answers with a problem. Headers set for a success body
// must not describe it.
func Write(w http.ResponseWriter, status int, detail string) {
	for _, k := range []string{"Content-Length", "Content-Encoding", "ETag", "Last-Modified", "Location"} {
		w.Header().Del(k)
	}
	// Details may quote the request or a store's error.
	detail = truncate.Text(detail, truncate.REST)
	JSON(w, status, ProblemType, Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail})
}

// JSON answers status with v encoded as JSON of contentType.
func JSON(w http.ResponseWriter, status int, contentType string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a programming error (an unsupported type) gets here.
		http.Error(w, "encoding the response failed", http.StatusInternalServerError)
		return
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(b)
}
