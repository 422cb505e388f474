// Package cli is the command line of catalogsync's binaries: the setting
// groups they share, declared once as struct fields (flag name,
// environment variable(s), default, help, check), and the parser that
// resolves them.
//
// One precedence rule, whatever the setting: flag > env > file > default.
// A flag given on the command line is known to be set even when its value
// equals the default. Every value that does not parse or fails its check
// stops the start with a UsageError (exit code 2), naming the setting and
// where the value came from.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/alecthomas/kong"
)

// UsageError is a mistake in the command line, the environment or the
// config file: the process exits with code 2 naming it.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Exit carries the code kong asks to exit with (help: 0).
type Exit int

func (e Exit) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// EnvOnly is a setting read from the environment only: a flag would show
// in ps, or the value is needed before the command line is read.
type EnvOnly struct{ Env, Cmd, Help string }

// Options say what a binary's command line holds besides this package's
// groups.
type Options struct {
	Name, Description string
	// Groups title the group:"..." keys; help lists them in this order.
	Groups []kong.Group
	// Vars are defaults the declarations name (defaultvar:"name",
	// docdefault's ${name}) on top of this package's.
	Vars func() map[string]string
	// Checks are value checks (check:"name") on top of this package's.
	Checks map[string]func(v any) error
	// File looks up a config-file key (file:"key"); nil: no file.
	File func(kctx *kong.Context, key string) (string, bool)
	// EnvOnly settings are listed in the help of their command.
	EnvOnly []EnvOnly
}

// Where a value came from, for messages.
const (
	OriginFlag    = "flag"
	OriginEnv     = "env"
	OriginFile    = "file"
	OriginDefault = "default"
)

// Origins records, per flag name, where its value came from ("env NAME",
// "file key KEY", "default"); a flag not in it was given on the command
// line.
type Origins map[string]string

// Of says where the flag's value came from.
func (o Origins) Of(name string) string {
	if v, ok := o[name]; ok {
		return v
	}
	return OriginFlag + " --" + name
}

// envForm adapts variables whose value is not the flag's own form.
var envForm = map[string]func(string) string{
	"PORT": func(v string) string { return ":" + v },
}

// NewParser builds the command line for target, writing help to stdout;
// a help request panics with an Exit, which Parse recovers.
func NewParser(target any, stdout, stderr io.Writer, o Options) (*kong.Kong, Origins, error) {
	r := &resolver{from: Origins{}, o: o}
	k, err := kong.New(target,
		kong.Name(o.Name),
		kong.Description(o.Description),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(Exit(code)) }),
		kong.Resolvers(r),
		kong.ExplicitGroups(o.Groups),
		kong.Help(o.printHelp),
	)
	return k, r.from, err
}

// Parse parses args into target and checks every value; the origins say
// where each value came from. Help ends it with an Exit error.
func Parse(target any, args []string, stdout, stderr io.Writer, o Options) (kctx *kong.Context, from Origins, err error) {
	defer func() {
		if r := recover(); r != nil {
			exit, ok := r.(Exit)
			if !ok {
				panic(r)
			}
			kctx, from, err = nil, nil, exit
		}
	}()
	k, from, err := NewParser(target, stdout, stderr, o)
	if err != nil {
		return nil, nil, err
	}
	if err := o.checkCommand(k, args); err != nil {
		return nil, nil, err
	}
	kctx, err = k.Parse(args)
	if err != nil {
		msg := err.Error()
		if !strings.Contains(msg, "(from ") {
			msg += " (from the command line)" // the resolver names env and file
		}
		return nil, nil, UsageError{msg}
	}
	for _, f := range kctx.Flags() {
		name := f.Tag.Get("check")
		if name == "" {
			continue
		}
		if err := o.check(name)(kctx.FlagValue(f)); err != nil {
			return nil, nil, UsageError{fmt.Sprintf("--%s: %v (from %s)", f.Name, err, from.Of(f.Name))}
		}
	}
	return kctx, from, nil
}

// checkCommand says what is wrong with a missing or unknown command more
// plainly than the parser, for a command line that has commands.
func (o Options) checkCommand(k *kong.Kong, args []string) error {
	var names []string
	for _, n := range k.Model.Children {
		if !n.Hidden {
			names = append(names, n.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	hint := "usage: " + o.Name + ` COMMAND [flags], COMMAND one of %s; "` + o.Name + ` COMMAND -h" lists a command's flags`
	switch {
	case len(args) == 0:
		return UsageError{fmt.Sprintf(hint, strings.Join(names, ", "))}
	case strings.HasPrefix(args[0], "-") || slices.ContainsFunc(k.Model.Children, func(n *kong.Node) bool { return n.Name == args[0] }):
		return nil
	}
	return UsageError{fmt.Sprintf("unknown command %q; "+hint, args[0], strings.Join(names, ", "))}
}

// resolver supplies, for each flag not given on the command line, its
// environment value, else its config-file value, else its default; it
// checks that the value parses, so the error can say where it came from.
type resolver struct {
	from Origins
	o    Options
}

func (r *resolver) Validate(*kong.Application) error { return nil }

func (r *resolver) Resolve(kctx *kong.Context, _ *kong.Path, f *kong.Flag) (any, error) {
	for _, env := range f.Envs {
		v := strings.TrimSpace(os.Getenv(env))
		if v == "" {
			continue // set but empty counts as unset
		}
		if form := envForm[env]; form != nil {
			v = form(v)
		}
		return r.use(f, v, OriginEnv+" "+env)
	}
	if key := f.Tag.Get("file"); key != "" && r.o.File != nil {
		if v, ok := r.o.File(kctx, key); ok {
			return r.use(f, v, OriginFile+" key "+key)
		}
	}
	r.from[f.Name] = OriginDefault
	if d, ok := r.o.Default(f.Value); ok {
		// Undo what kong took from an empty variable.
		return d, nil
	}
	return nil, nil
}

func (r *resolver) use(f *kong.Flag, v, from string) (any, error) {
	r.from[f.Name] = from
	scratch := reflect.New(f.Target.Type()).Elem()
	if err := f.Parse(kong.ScanFromTokens(kong.Token{Type: kong.FlagValueToken, Value: v}), scratch); err != nil {
		return nil, fmt.Errorf("%w (from %s=%q)", errors.Unwrap(err), from, v)
	}
	return v, nil
}

// ExitCode reports err on stderr, prefixed with the binary's name, and
// returns the exit code: 0 without an error, kong's for help, 2 for a
// UsageError, 1 for anything else.
func ExitCode(stderr io.Writer, name string, err error) int {
	var exit Exit
	var usage UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return int(exit)
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, name+":", err)
		return 2
	}
	fmt.Fprintln(stderr, name+":", err)
	return 1
}
