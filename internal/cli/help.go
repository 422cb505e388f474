package cli

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/kong"
)

// printHelp is kong's help with the flags in Groups' order, each flag's
// default shown in words rather than as its placeholder, and the
// settings read from the environment only.
func (o Options) printHelp(opts kong.HelpOptions, kctx *kong.Context) error {
	node := kctx.Selected()
	if node == nil && len(kctx.Model.Children) == 0 {
		node = kctx.Model.Node // a binary without commands
	}
	if node != nil {
		rank := func(f *kong.Flag) int {
			if f.Group == nil {
				return -1
			}
			return slices.IndexFunc(o.Groups, func(g kong.Group) bool { return g.Key == f.Group.Key })
		}
		slices.SortStableFunc(node.Flags, func(a, b *kong.Flag) int { return rank(a) - rank(b) })
		for _, f := range node.Flags {
			if _, ok := o.Default(f.Value); ok && f.PlaceHolder == "" {
				f.PlaceHolder = placeholder(f.Target.Type())
			}
		}
	}
	opts.ValueFormatter = o.helpValue
	if err := kong.DefaultHelpPrinter(opts, kctx); err != nil {
		return err
	}
	var lines []string
	for _, e := range o.EnvOnly {
		if node != nil && (e.Cmd == node.Name || e.Cmd == o.Name) {
			lines = append(lines, "  "+e.Env+"\n"+Wrap(strings.ReplaceAll(e.Help, "`", ""), "      ", 80))
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
func (o Options) helpValue(v *kong.Value) string {
	var tail []string
	if d := v.Tag.Get("docdefault"); d != "" {
		tail = append(tail, "default "+o.Interpolate(d))
	} else if d, ok := o.Default(v); ok && d != "" && !(v.IsBool() && d == "false") {
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

// Wrap breaks text into lines of at most width, each after indent.
func Wrap(text, indent string, width int) string {
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
