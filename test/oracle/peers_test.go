package oracle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/catalogsync/catalogsync/test/servers"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/sync/fbc"
)

// peersDir is the folder of the reference binaries (servers.Peer), or
// skips.
func peersDir(t testing.TB) string {
	t.Helper()
	servers.Peer(t, "catalogd-ref")
	return filepath.Dir(servers.Peer(t, "opm"))
}

// verdict is what one side said about a catalog.
type verdict struct {
	// stored: catalogd stores it (our parse accepts it); bytes are then
	// its catalog.jsonl.
	stored bool
	bytes  []byte
	// valid: opm validate accepts it; rules name what fired otherwise.
	valid bool
	rules []string
	// stage of the first failing opm step ("load", "convert", "model").
	stage string
	msg   string
}

// parseSplit: opm refused the catalog as unparseable, catalogd stored it.
func (v verdict) parseSplit() bool {
	return v.stored && !v.valid && v.stage == "load" && v.rules[0] == fbc.RuleParse
}

// runPeers runs opm validate and catalogd-ref store on dir.
func runPeers(ctx context.Context, peers, dir, work string) (verdict, error) {
	var v verdict
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := servers.PeerCommand(ctx, work, filepath.Join(peers, "opm"), "validate", dir).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		v.valid = true
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		v.msg = logrusMsg(out)
		v.stage, v.rules = classifyOPM(v.msg)
	default:
		return v, fmt.Errorf("opm validate: %v: %s", err, out)
	}
	root := filepath.Join(work, "catalogd")
	out, err = exec.CommandContext(ctx, filepath.Join(peers, "catalogd-ref"), "store", "-fbc", dir, "-root", root, "-name", "c").CombinedOutput()
	switch {
	case err == nil:
		v.stored = true
		if v.bytes, err = os.ReadFile(filepath.Join(root, "c", "catalog.jsonl")); err != nil {
			return v, err
		}
	case errors.As(err, &exit) && exit.ExitCode() == 1:
	default:
		return v, fmt.Errorf("catalogd-ref store: %v: %s", err, out)
	}
	return v, nil
}

var logrusRe = regexp.MustCompile(`level=fatal msg=("(?:[^"\\]|\\.)*")`)

func logrusMsg(out []byte) string {
	m := logrusRe.FindSubmatch(out)
	if m == nil {
		return string(out)
	}
	s, err := strconv.Unquote(string(m[1]))
	if err != nil {
		return string(out)
	}
	return s
}

// opmRules maps opm's messages to the rule names sync/fbc reports. The
// first match of a line wins.
var opmRules = []struct {
	re   *regexp.Regexp
	rule string
}{
	{regexp.MustCompile(`(?s)^object '.*' is missing root schema field`), fbc.RuleSchemaMissing},
	{regexp.MustCompile(`^(parse (package|channel|bundle|deprecation)): `), fbc.RuleDecode},
	{regexp.MustCompile(`^read bundle objects: `), fbc.RuleProperty},
	{regexp.MustCompile(`^config contains package with no name`), fbc.RulePackageName},
	{regexp.MustCompile(`^duplicate package `), fbc.RulePackageDuplicate},
	{regexp.MustCompile(`^invalid package name `), fbc.RulePackageName},
	{regexp.MustCompile(`^unknown package .* for channel `), fbc.RuleChannelPackage},
	{regexp.MustCompile(`^package .* contains channel with no name`), fbc.RuleChannelName},
	{regexp.MustCompile(`^package .* has duplicate channel `), fbc.RuleChannelDuplicate},
	{regexp.MustCompile(`^invalid package .*, channel .*: duplicate entry `), fbc.RuleEntryDuplicate},
	{regexp.MustCompile(`^package name must be set for bundle `), fbc.RuleBundlePackage},
	{regexp.MustCompile(`^unknown package .* for bundle `), fbc.RuleBundlePackage},
	{regexp.MustCompile(`^package .* has duplicate bundle `), fbc.RuleBundleDuplicate},
	{regexp.MustCompile(`^parse properties for bundle `), fbc.RuleProperty},
	{regexp.MustCompile(`bundle .* must have exactly 1 "olm.package" property`), fbc.RulePackageProperty},
	{regexp.MustCompile(`^package .* does not match "olm.package" property`), fbc.RulePackageMismatch},
	{regexp.MustCompile(`^error parsing bundle .* version `), fbc.RuleVersion},
	{regexp.MustCompile(`^package .*, bundle .* not found in any channel entries`), fbc.RuleBundleUnlisted},
	{regexp.MustCompile(`^no olm.bundle blobs found in package `), fbc.RuleBundleMissing},
	{regexp.MustCompile(`^package name must be set for deprecation item`), fbc.RuleDeprecationPackage},
	{regexp.MustCompile(`^cannot apply deprecations to an unknown package`), fbc.RuleDeprecationPackage},
	{regexp.MustCompile(`^expected a maximum of one deprecation per package`), fbc.RuleDeprecationDuplicate},
	{regexp.MustCompile(`^schema must be set for deprecation entry`), fbc.RuleDeprecationReference},
	{regexp.MustCompile(`^duplicate deprecation entry `), fbc.RuleDeprecationDuplicate},
	{regexp.MustCompile(`^cannot deprecate (bundle|channel) .*: (bundle|channel) not found`), fbc.RuleDeprecationReference},
	{regexp.MustCompile(`^package name must be empty for deprecated package`), fbc.RuleDeprecationReference},
	{regexp.MustCompile(`^cannot deprecate object .*: object schema unknown`), fbc.RuleDeprecationReference},
	// model.Validate's tree leaves
	{regexp.MustCompile(`invalid deprecation: message must be set`), fbc.RuleDeprecationMessage},
	{regexp.MustCompile(`^default channel must be set`), fbc.RuleDefaultChannel},
	{regexp.MustCompile(`^default channel .* not found in channels list`), fbc.RuleDefaultChannel},
	{regexp.MustCompile(`^package must contain at least one channel`), fbc.RulePackageChannels},
	{regexp.MustCompile(`^duplicate versions found in bundles`), fbc.RuleVersionDuplicate},
	{regexp.MustCompile(`^channel must contain at least one bundle`), fbc.RuleChannelEmpty},
	{regexp.MustCompile(`^no channel head found in graph`), fbc.RuleHead},
	{regexp.MustCompile(`^multiple channel heads found in graph`), fbc.RuleHead},
	{regexp.MustCompile(`^detected cycle in replaces chain`), fbc.RuleCycle},
	{regexp.MustCompile(`^channel contains one or more stranded bundles`), fbc.RuleStranded},
	{regexp.MustCompile(`^skip\[\d+\] is empty`), fbc.RuleSkipEmpty},
	{regexp.MustCompile(`^must be exactly one property with type "olm.package"`), fbc.RulePackageProperty},
	{regexp.MustCompile(`^bundle image must be set`), fbc.RuleImage},
	{regexp.MustCompile(`^name must be set`), fbc.RuleBundleName},
}

// classifyOPM names the rules in an opm validate message. A model
// validation tree ("invalid index:" ...) gives one rule per leaf; any
// other message is one error of loading or conversion, both of which stop
// at the first problem. Anything unrecognised is a parse error.
func classifyOPM(msg string) (stage string, rules []string) {
	msg = strings.TrimSpace(msg)
	if strings.HasPrefix(msg, "invalid index") {
		seen := map[string]bool{}
		for _, line := range strings.Split(msg, "\n") {
			line = strings.TrimLeft(line, "│├└─ \u00a0")
			if strings.HasPrefix(line, "invalid ") && strings.HasSuffix(line, ":") || line == "" {
				continue
			}
			r := matchRule(line)
			if r == "" {
				r = "unknown(" + line + ")"
			}
			if !seen[r] {
				seen[r] = true
				rules = append(rules, r)
			}
		}
		sort.Strings(rules)
		return "model", rules
	}
	if r := matchRule(msg); r != "" {
		stage = "convert"
		if r == fbc.RuleSchemaMissing || r == fbc.RuleDecode || strings.HasPrefix(msg, "read bundle objects") {
			stage = "load"
		}
		return stage, []string{r}
	}
	return "load", []string{fbc.RuleParse}
}

func matchRule(line string) string {
	for _, r := range opmRules {
		if r.re.MatchString(line) {
			return r.rule
		}
	}
	return ""
}

// same says whether two jsonl outputs are equal, and where they first
// differ.
func firstDiff(a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range max(len(la), len(lb)) {
		var x, y []byte
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if !bytes.Equal(x, y) {
			return fmt.Sprintf("line %d:\n  catalogd: %s\n  ours:     %s", i+1, x, y)
		}
	}
	return "differ"
}
