package webhook

import (
	"net/http"

	"github.com/cloudevents/sdk-go/v2/event"
)

// eventGrid reads Azure Container Registry events delivered by Event Grid
// in the CloudEvents v1.0 schema, one per request or batched. Event Grid
// authenticates with a static delivery property (a header) and validates
// the endpoint first with the CloudEvents OPTIONS handshake.
type eventGrid struct{ headerAuth }

func newEventGrid(c ReceiverConfig) *eventGrid { return &eventGrid{headerAuth: newHeaderAuth(c)} }

func (g *eventGrid) Type() string { return TypeEventGrid }

func (g *eventGrid) DeliveryIDs(r *http.Request, body []byte) []string {
	return cloudEventIDs(r.Header, body)
}

func (g *eventGrid) Parse(r *http.Request, body []byte) ([]Push, error) {
	if err := requireMediaType(r, event.ApplicationCloudEventsJSON, event.ApplicationCloudEventsBatchJSON); err != nil {
		return nil, err
	}
	return parseCloudEventsRequest(r.Header, body, ceOptions{acr: true})
}

func (g *eventGrid) Handshake(w http.ResponseWriter, r *http.Request) { AbuseProtection(w, r) }

// AbuseProtection answers the CloudEvents webhook validation handshake
// (an OPTIONS request with WebHook-Request-Origin) by allowing the origin
// at any rate. The handshake only protects the sender from flooding a
// stranger and carries no credentials; deliveries are authenticated.
// Callback URLs are not called: the synchronous answer suffices.
func AbuseProtection(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("WebHook-Request-Origin")
	if origin == "" {
		w.Header().Set("Allow", "OPTIONS, POST")
		http.Error(w, "OPTIONS is only the CloudEvents webhook handshake: WebHook-Request-Origin is missing", http.StatusBadRequest)
		return
	}
	w.Header().Set("WebHook-Allowed-Origin", origin)
	w.Header().Set("WebHook-Allowed-Rate", "*")
	w.Header().Set("Allow", "OPTIONS, POST")
	w.WriteHeader(http.StatusOK)
}
