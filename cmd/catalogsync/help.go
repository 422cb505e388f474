package main

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/kong"
)

// flagGroups title the group:"..." keys of the declarations; help lists
// them in this order.
var flagGroups = []kong.Group{
	{Key: "catalogs", Title: "Catalogs:"},
	{Key: "store", Title: "Store:"},
	{Key: "registries", Title: "Registries (how images are read):"},
	{Key: "syncs", Title: "Syncs:"},
	{Key: "http", Title: "Serving:"},
	{Key: "access", Title: "Access and TLS:"},
	{Key: "gc", Title: "Garbage collection:"},
	{Key: "log", Title: "Logging:"},
}

// printHelp is kong's help with the flags in flagGroups' order, each
// flag's default shown in words rather than as its placeholder, and the
// settings read from the environment only.
func printHelp(opts kong.HelpOptions, kctx *kong.Context) error {
	if node := kctx.Selected(); node != nil {
		rank := func(f *kong.Flag) int {
			if f.Group == nil {
				return -1
			}
			return slices.IndexFunc(flagGroups, func(g kong.Group) bool { return g.Key == f.Group.Key })
		}
		slices.SortStableFunc(node.Flags, func(a, b *kong.Flag) int { return rank(a) - rank(b) })
		for _, f := range node.Flags {
			if _, ok := flagDefault(f.Value); ok && f.PlaceHolder == "" {
				f.PlaceHolder = placeholder(f.Target.Type())
			}
		}
	}
	opts.ValueFormatter = helpValue
	if err := kong.DefaultHelpPrinter(opts, kctx); err != nil {
		return err
	}
	var lines []string
	for _, e := range envOnly {
		if kctx.Selected() != nil && e.Cmd == kctx.Selected().Name {
			lines = append(lines, "  "+e.Env+"\n"+wrap(strings.ReplaceAll(e.Help, "`", ""), "      ", 80))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(kctx.Stdout, "\nEnvironment only (a flag would show in ps):\n%s\n", strings.Join(lines, "\n"))
	}
	return nil
}

func placeholder(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return "DURATION"
	case t.Kind() == reflect.Int, t.Kind() == reflect.Float64:
		return "N"
	}
	return strings.ToUpper(t.Kind().String())
}

// helpValue is a flag's help, its default (docdefault's words, else the
// value) and its environment variables.
func helpValue(v *kong.Value) string {
	var tail []string
	if d := v.Tag.Get("docdefault"); d != "" {
		tail = append(tail, "default "+interpolate(d))
	} else if d, ok := flagDefault(v); ok && d != "" && !(v.IsBool() && d == "false") {
		tail = append(tail, "default "+d)
	}
	if len(v.Tag.Envs) > 0 {
		tail = append(tail, "$"+strings.Join(v.Tag.Envs, ", $"))
	}
	if len(tail) == 0 {
		return v.Help
	}
	return v.Help + " (" + strings.Join(tail, "; ") + ")"
}

// wrap breaks text into lines of at most width, each after indent.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		switch {
		case n == 0:
			b.WriteString(indent)
			n = len(indent)
		case n+1+len(w) > width:
			b.WriteString("\n" + indent)
			n = len(indent)
		default:
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
