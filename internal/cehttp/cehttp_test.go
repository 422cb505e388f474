package cehttp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	sdkhttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

func sample(t *testing.T) event.Event {
	t.Helper()
	ev := event.New()
	ev.SetID("id-1")
	ev.SetSource("/registry.example.test")
	ev.SetType("harbor.artifact.pushed")
	ev.SetSubject("library/app")
	ev.SetTime(time.Date(2026, 12, 5, 4, 30, 0, 123000000, time.UTC))
	ev.SetDataSchema("https://schema.example.test/v1")
	ev.SetExtension("traceparent", "00-abc-def-01")
	ev.SetExtension("priority", "high")
	if err := ev.SetData(event.ApplicationJSON, map[string]string{"digest": "sha256:ab"}); err != nil {
		t.Fatal(err)
	}
	return ev
}

// sdkRequest encodes ev as the SDK's own HTTP binding does.
func sdkRequest(t *testing.T, ctx context.Context, ev event.Event) (http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://sink.example.test", nil)
	if err := sdkhttp.WriteRequest(ctx, binding.ToMessage(&ev), req); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(req.Body)
	return req.Header, body
}

func sameEvent(t *testing.T, got, want event.Event) {
	t.Helper()
	g, _ := got.MarshalJSON()
	w, _ := want.MarshalJSON()
	if !bytes.Equal(g, w) {
		t.Errorf("event\n got %s\nwant %s", g, w)
	}
}

func TestReadsEachContentModeAsTheSDKWritesIt(t *testing.T) {
	ev := sample(t)
	for name, ctx := range map[string]context.Context{
		"binary":     binding.WithForceBinary(context.Background()),
		"structured": binding.WithForceStructured(context.Background()),
	} {
		t.Run(name, func(t *testing.T) {
			h, body := sdkRequest(t, ctx, ev)
			got, err := binding.ToEvent(context.Background(), NewMessage(h, bytes.NewReader(body)))
			if err != nil {
				t.Fatal(err)
			}
			sameEvent(t, *got, ev)
		})
	}
	t.Run("batch", func(t *testing.T) {
		other := sample(t)
		other.SetID("id-2")
		body, _ := (&batch{ev, other}).json()
		h := http.Header{"Content-Type": {event.ApplicationCloudEventsBatchJSON}}
		m := NewMessage(h, bytes.NewReader(body))
		if m.ReadEncoding() != binding.EncodingBatch {
			t.Fatalf("encoding %v, want batch", m.ReadEncoding())
		}
		got, err := binding.ToEvents(context.Background(), m, bytes.NewReader(body))
		if err != nil || len(got) != 2 {
			t.Fatalf("%d events, %v", len(got), err)
		}
		sameEvent(t, got[1], other)
	})
}

func TestPlainRequestIsNoCloudEvent(t *testing.T) {
	m := NewMessage(http.Header{"Content-Type": {"application/json"}}, bytes.NewReader([]byte(`{}`)))
	if enc := m.ReadEncoding(); enc != binding.EncodingUnknown {
		t.Errorf("encoding %v, want unknown", enc)
	}
}

func TestSDKReadsTheBinaryModeWritten(t *testing.T) {
	ev := sample(t)
	req, _ := http.NewRequest(http.MethodPost, "http://sink.example.test", nil)
	if err := WriteBinary(context.Background(), &ev, req); err != nil {
		t.Fatal(err)
	}
	if req.Header.Get("Ce-Specversion") != "1.0" || req.Header.Get("Content-Type") != event.ApplicationJSON {
		t.Errorf("headers %v: want binary mode", req.Header)
	}
	// The body can be read again, as a retry or redirect does.
	for range 2 {
		body, err := req.GetBody()
		if err != nil {
			t.Fatal(err)
		}
		got, err := binding.ToEvent(context.Background(), sdkhttp.NewMessage(req.Header, body))
		if err != nil {
			t.Fatal(err)
		}
		sameEvent(t, *got, ev)
	}
	if req.ContentLength != int64(len(ev.Data())) {
		t.Errorf("content length %d, want %d", req.ContentLength, len(ev.Data()))
	}
}

type batch []event.Event

func (b *batch) json() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, ev := range *b {
		if i > 0 {
			buf.WriteByte(',')
		}
		j, err := ev.MarshalJSON()
		if err != nil {
			return nil, err
		}
		buf.Write(j)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}
