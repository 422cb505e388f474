package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kong"

	"github.com/catalogsync/catalogsync/storage/s3"
)

// DefaultStore is the local store directory when none is set.
const DefaultStore = ".catalogsync/store"

// baseVars are the defaults this package's groups name. The resolver
// applies them rather than kong's own ${var} defaults, whose
// interpolation ran a regexp for every variable of every flag. Built
// once: a parse asks for each flag's default.
var baseVars = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"defaultStore": DefaultStore,
		"s3Stall":      ShortDuration(s3.DefaultStallTimeout),
	}
})

// Var is the default named name: the binary's (Options.Vars), else this
// package's.
func (o Options) Var(name string) (string, bool) {
	if o.Vars != nil {
		if v, ok := o.Vars()[name]; ok {
			return v, true
		}
	}
	v, ok := baseVars()[name]
	return v, ok
}

// Default is a flag's default: its defaultvar's value, else kong's.
func (o Options) Default(v *kong.Value) (string, bool) {
	if name := v.Tag.Get("defaultvar"); name != "" {
		return o.Var(name)
	}
	return v.Default, v.HasDefault
}

// Interpolate fills docdefault's ${name} words.
func (o Options) Interpolate(s string) string {
	for strings.Contains(s, "${") {
		i := strings.Index(s, "${")
		j := strings.Index(s[i:], "}")
		if j < 0 {
			break
		}
		v, _ := o.Var(s[i+2 : i+j])
		s = s[:i] + v + s[i+j+1:]
	}
	return s
}

// ShortDuration prints 1h, not 1h0m0s.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// check is the value check a declaration names: the binary's, else this
// package's. A name neither declares is a bug the tests catch.
func (o Options) check(name string) func(v any) error {
	if c := o.Checks[name]; c != nil {
		return c
	}
	return baseChecks[name]
}

// HasCheck says whether check:"name" is declared.
func (o Options) HasCheck(name string) bool { return o.check(name) != nil }

var baseChecks = map[string]func(v any) error{
	"nonneg": func(v any) error {
		if sign(v) < 0 {
			return errors.New("must not be negative")
		}
		return nil
	},
	"positive": func(v any) error {
		if sign(v) <= 0 {
			return errors.New("must be positive")
		}
		return nil
	},
	"loglevel": func(v any) error {
		var l slog.Level
		return l.UnmarshalText([]byte(v.(string)))
	},
	"bytes": func(v any) error {
		_, err := ParseBytes(v.(string))
		return err
	},
	"httpurl": func(v any) error {
		s := v.(string)
		if s == "" {
			return nil
		}
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%q is not an absolute http(s) URL", s)
		}
		return nil
	},
}

func sign(v any) int {
	var f float64
	switch v := v.(type) {
	case int:
		f = float64(v)
	case float64:
		f = v
	case time.Duration:
		f = float64(v)
	default:
		panic(fmt.Sprintf("check of a %T", v))
	}
	switch {
	case f < 0:
		return -1
	case f > 0:
		return 1
	}
	return 0
}

// ParseBytes reads a byte count: a plain number or one with a K, M, G or
// T suffix (powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "B")
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}} {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = v, u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || n < 0 || n*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("%q is not a byte count like 5000000000, 5G or 4.5Gi", s)
	}
	return int64(n * float64(mult)), nil
}
