package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unicode"
)

// dockerfileStage is what the final stage of a Dockerfile says about its
// image: the instructions that end up in the image config, and where its
// COPY instructions put files.
type dockerfileStage struct {
	user       string
	expose     []string
	labels     map[string]string
	env        map[string]string
	entrypoint []string
	cmd        []string
	copyDests  []string
	// runs are the RUN instructions of all stages, joined continuation
	// lines, to check how the binary is built.
	runs []string
}

// parseDockerfile reads the instructions this repository's Dockerfile
// uses: line continuations, comments, key=value lists (LABEL, ENV) with
// double quotes, and exec-form (JSON) ENTRYPOINT and CMD.
func parseDockerfile(path string) (dockerfileStage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return dockerfileStage{}, err
	}
	var st dockerfileStage
	var runs []string
	for _, line := range logicalLines(string(b)) {
		instr, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			st = dockerfileStage{labels: map[string]string{}, env: map[string]string{}}
		case "RUN":
			runs = append(runs, rest)
		case "USER":
			st.user = rest
		case "EXPOSE":
			st.expose = append(st.expose, strings.Fields(rest)...)
		case "LABEL", "ENV":
			kv, err := keyValues(rest)
			if err != nil {
				return st, fmt.Errorf("%s %s: %w", instr, rest, err)
			}
			target := st.labels
			if strings.ToUpper(instr) == "ENV" {
				target = st.env
			}
			for k, v := range kv {
				target[k] = v
			}
		case "ENTRYPOINT", "CMD":
			var v []string
			if err := json.Unmarshal([]byte(rest), &v); err != nil {
				return st, fmt.Errorf("%s must be in exec form: %w", instr, err)
			}
			if strings.ToUpper(instr) == "CMD" {
				st.cmd = v
			} else {
				st.entrypoint = v
			}
		case "COPY":
			f := strings.Fields(rest)
			st.copyDests = append(st.copyDests, f[len(f)-1])
		}
	}
	st.runs = runs
	return st, nil
}

// logicalLines joins continuation lines and drops comments and blanks.
func logicalLines(s string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#") || (t == "" && cur.Len() == 0) {
			continue
		}
		if c, ok := strings.CutSuffix(t, "\\"); ok {
			cur.WriteString(c + " ")
			continue
		}
		cur.WriteString(t)
		out = append(out, strings.Join(strings.Fields(cur.String()), " "))
		cur.Reset()
	}
	return out
}

// keyValues parses `k=v k2="v 2"`.
func keyValues(s string) (map[string]string, error) {
	out := map[string]string{}
	for s = strings.TrimLeftFunc(s, unicode.IsSpace); s != ""; s = strings.TrimLeftFunc(s, unicode.IsSpace) {
		k, rest, ok := strings.Cut(s, "=")
		if !ok || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("not key=value at %q", s)
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote at %q", rest)
			}
			v, s = rest[1:end+1], rest[end+2:]
		} else {
			v, s, _ = strings.Cut(rest, " ")
		}
		out[k] = v
	}
	return out, nil
}
