// Package cehttp carries CloudEvents over HTTP (the CloudEvents HTTP
// protocol binding) with the SDK's event and binding packages. The SDK's
// own protocol/http package is not linked: it builds a production logger
// in its init at every start (about 460 KB, 13 packages) for a binding of
// a few dozen lines.
package cehttp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/textproto"
	"strings"
	"sync"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
)

const prefix = "Ce-"

// headerName is the header of a context attribute.
func headerName(attr string) string {
	if attr == "datacontenttype" {
		return "Content-Type"
	}
	return textproto.CanonicalMIMEHeaderKey(prefix + attr)
}

var specs = sync.OnceValue(func() *spec.Versions {
	return spec.WithPrefixMatchExact(headerName, prefix)
})

// Message is a request's CloudEvents, in whichever content mode it
// carries them: binary (ce-* headers), structured or batched.
type Message struct {
	header  http.Header
	body    io.Reader
	format  format.Format
	version spec.Version
}

// binding.ToEvent reads a binary message's metadata too.
var _ binding.MessageMetadataReader = (*Message)(nil)

// NewMessage reads the content mode of a request's header and body.
func NewMessage(h http.Header, body io.Reader) *Message {
	m := &Message{header: h, body: body}
	if m.format = format.Lookup(h.Get("Content-Type")); m.format == nil {
		vs := specs()
		m.version = vs.Version(h.Get(vs.PrefixedSpecVersionName()))
	}
	return m
}

// ReadEncoding implements binding.MessageReader.
func (m *Message) ReadEncoding() binding.Encoding {
	switch {
	case m.version != nil:
		return binding.EncodingBinary
	case m.format == format.JSONBatch:
		return binding.EncodingBatch
	case m.format != nil:
		return binding.EncodingStructured
	}
	return binding.EncodingUnknown
}

// ReadStructured implements binding.MessageReader.
func (m *Message) ReadStructured(ctx context.Context, w binding.StructuredWriter) error {
	if m.format == nil {
		return binding.ErrNotStructured
	}
	return w.SetStructuredEvent(ctx, m.format, m.body)
}

// ReadBinary implements binding.MessageReader.
func (m *Message) ReadBinary(_ context.Context, w binding.BinaryWriter) error {
	if m.version == nil {
		return binding.ErrNotBinary
	}
	for k, v := range m.header {
		var err error
		if attr := m.version.Attribute(k); attr != nil {
			err = w.SetAttribute(attr, v[0])
		} else if name, ok := strings.CutPrefix(k, prefix); ok && name != "" {
			err = w.SetExtension(strings.ToLower(name), v[0])
		}
		if err != nil {
			return err
		}
	}
	if m.body != nil {
		return w.SetData(m.body)
	}
	return nil
}

// GetAttribute implements binding.MessageMetadataReader.
func (m *Message) GetAttribute(k spec.Kind) (spec.Attribute, any) {
	if m.version == nil {
		return nil, nil
	}
	attr := m.version.AttributeFromKind(k)
	if attr == nil {
		return nil, nil
	}
	if v := m.header.Values(headerName(attr.Name())); len(v) > 0 {
		return attr, v[0]
	}
	return attr, nil
}

// GetExtension implements binding.MessageMetadataReader.
func (m *Message) GetExtension(name string) any {
	if v := m.header.Values(headerName(name)); len(v) > 0 {
		return v[0]
	}
	return nil
}

// WriteBinary sets req's headers and body to ev in binary mode: the
// attributes and extensions as ce-* headers, the data as the body.
func WriteBinary(ctx context.Context, ev *event.Event, req *http.Request) error {
	_, err := binding.Write(binding.WithForceBinary(ctx), binding.ToMessage(ev), nil, (*requestWriter)(req))
	return err
}

type requestWriter http.Request

func (r *requestWriter) Start(context.Context) error { return nil }
func (r *requestWriter) End(context.Context) error   { return nil }

func (r *requestWriter) SetAttribute(attr spec.Attribute, v any) error {
	return r.set(headerName(attr.Name()), v)
}

func (r *requestWriter) SetExtension(name string, v any) error {
	return r.set(headerName(name), v)
}

func (r *requestWriter) set(h string, v any) error {
	if v == nil {
		r.Header.Del(h)
		return nil
	}
	s, err := types.Format(v)
	if err != nil {
		return err
	}
	r.Header.Set(h, s)
	return nil
}

// SetData buffers the data so the request can be sent again on a
// redirect or retry.
func (r *requestWriter) SetData(data io.Reader) error {
	b, err := io.ReadAll(data)
	if err != nil {
		return err
	}
	r.ContentLength = int64(len(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	r.Body, _ = r.GetBody()
	if len(b) == 0 {
		r.Body = http.NoBody
	}
	return nil
}
