package truncate

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler returns a handler that passes every record to h with its
// message and attribute values (strings, errors, anything printed as
// text, in groups too) made Text of limit Log, so no log line carries
// more than Log bytes of any one value from outside.
func Handler(h slog.Handler) slog.Handler { return boundHandler{h} }

type boundHandler struct{ h slog.Handler }

func (b boundHandler) Enabled(ctx context.Context, l slog.Level) bool { return b.h.Enabled(ctx, l) }

func (b boundHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Text(r.Message, Log), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(boundAttr(a))
		return true
	})
	return b.h.Handle(ctx, out)
}

func (b boundHandler) WithAttrs(as []slog.Attr) slog.Handler {
	bs := make([]slog.Attr, len(as))
	for i, a := range as {
		bs[i] = boundAttr(a)
	}
	return boundHandler{b.h.WithAttrs(bs)}
}

func (b boundHandler) WithGroup(name string) slog.Handler { return boundHandler{b.h.WithGroup(name)} }

// boundAttr is a with its value bounded: LogValuers resolved, groups
// walked, text cut; numbers, times and durations kept as they are.
func boundAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Text(v.String(), Log))
	case slog.KindGroup:
		g := v.Group()
		bs := make([]slog.Attr, len(g))
		for i, ga := range g {
			bs[i] = boundAttr(ga)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(bs...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, Err(x, Log))
		case fmt.Stringer:
			return slog.String(a.Key, Text(x.String(), Log))
		default:
			return slog.String(a.Key, Text(fmt.Sprintf("%+v", x), Log))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
