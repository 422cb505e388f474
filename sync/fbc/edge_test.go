package fbc

import (
	"strings"
	"testing"
)

// edgeCases are inputs where YAML/JSON decoding subtleties change bytes or
// the error outcome. Each one must parse exactly like the reference path.
var edgeCases = map[string]string{
	"empty":               "",
	"only separator":      "---",
	"only separator nl":   "---\n",
	"two separators":      "---\n---\n",
	"blank lines":         "\n\n",
	"comment only":        "# hello\n",
	"trailing separator":  "schema: a\n---\n",
	"trailing sep blank":  "schema: a\n---\n\n",
	"leading separator":   "---\nschema: a\nname: b\n",
	"separator comment":   "--- # c\nschema: a\n--- #x\nschema: b\n",
	"bad separator":       "schema: a\n--- foo\nschema: b\n",
	"dashes4":             "schema: a\n----\nschema: b\n",
	"crlf":                "schema: a\r\nname: b\r\n---\r\nschema: c\r\n",
	"lone cr":             "schema: a\rname: b\n",
	"no final newline":    "schema: a\nname: b",
	"bom":                 "\ufeffschema: a\n",
	"bom json":            "\ufeff{\"schema\":\"a\"}",
	"yes no on off":       "schema: a\nv: [yes, no, on, off, y, n, Y, N, True, FALSE, ~, null, Null]\n",
	"quoted bools":        "schema: a\nv: ['yes', \"no\", 'on']\n",
	"numbers":             "schema: a\nv: [1, -1, 0, -0, 1.0, 1.5, 1e21, 1e20, 1e-7, 0.000001, 12345678901234567890, 123456789012345678901234, 0x1F, 017, 0o17, 0b101, -0b101, 1_000, +5, .5, -.5, 1e400, .inf, 3., 9007199254740993]\n",
	"nan":                 "schema: a\nv: .nan\n",
	"inf":                 "schema: a\nv: -.Inf\n",
	"big int keys":        "schema: a\n1: x\n1.5: y\n3.14159265358979: z\ntrue: t\n",
	"null key":            "schema: a\n~: x\n",
	"uint key":            "schema: a\n18446744073709551615: x\n",
	"html chars":          "schema: a\nv: \"<a href='x'>&amp;</a>\"\n",
	"u2028":               "schema: a\nv: \"line\\u2028sep\\u2029par\"\n",
	"u2028 raw":           "schema: a\nv: \"line\u2028sep\"\n",
	"unicode":             "schema: a\nname: héllo wörld ✓ 😀\nv: 日本語\n",
	"control escapes":     "schema: a\nv: \"\\0\\a\\b\\t\\n\\v\\f\\r\\e\\x7f\\N\\_\\L\\P\"\n",
	"invalid utf8":        "schema: a\nv: \xff\xfe\n",
	"invalid utf8 json":   "{\"schema\":\"a\",\"v\":\"\xff\xfe\"}",
	"binary":              "schema: a\nv: !!binary gIGC\n",
	"anchors":             "schema: a\nbase: &b {x: 1, y: [1, 2]}\nref: *b\n",
	"merge":               "schema: a\nbase: &b {x: 1}\nm:\n  <<: *b\n  y: 2\n",
	"dup keys":            "schema: a\nk: 1\nk: 2\n",
	"dup fold keys":       "schema: a\nName: x\nname: y\n",
	"dup fold schema":     "schema: a\nSCHEMA: b\n",
	"kelvin fold":         "schema: a\n\u212aey: x\nkey: y\n",
	"case schema":         "Schema: a\nPackage: p\nNAME: n\n",
	"schema not string":   "schema: 1\n",
	"name not string":     "schema: a\nname: [x]\n",
	"no schema":           "name: a\n",
	"schema empty":        "schema: ''\n",
	"scalar doc":          "hello\n",
	"list doc":            "- a\n- b\n",
	"comments":            "# head\nschema: a # trailing\n# mid\nname: b\n",
	"block scalars":       "schema: a\nl: |\n  one\n  two\n\n\nk: |-\n  x\n\n  y\n\nm: |+\n  keep\n\n\nf: >\n  folded\n  text\n\n  para\n  \n   more\ng: >-\n  a\n  b\nh: |2\n    indented\n   less\n",
	"plain multiline":     "schema: a\nd: this is\n  a long\n\n  folded plain\n    scalar\nn: x\n",
	"quoted multiline":    "schema: a\nd: \"double\n  quoted \\\n  escaped\\n\n\n  next\"\ns: 'single ''q''\n\n  next'\n",
	"tabs":                "schema: a\nv: \"a\tb\"\nw: x\ty\n",
	"timestamp":           "schema: a\nt: 2021-02-21T00:00:00Z\nd: 2001-12-14\ne: !!timestamp 2001-12-14\n",
	"tags":                "schema: a\ns: !!str 123\ni: !!int \"7\"\nf: !!float 1\n",
	"flow":                "schema: a\nm: {a: 1, b: [x, {c: d}]}\ne: {}\nl: []\n",
	"deep":                "schema: a\nv: " + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + "\n",
	"deep ok":             "schema: a\nv: " + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + "\n",
	"deep json":           "{\"schema\":\"a\",\"v\":" + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "}",
	"deep json ok":        "{\"schema\":\"a\",\"v\":" + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + "}",
	"huge line":           "schema: a\nv: " + strings.Repeat("x", 200000) + "\n",
	"huge key":            "schema: a\n" + strings.Repeat("k", 2000) + ": v\n",
	"doc end marker":      "schema: a\n...\nfoo: [\n",
	"directive":           "%YAML 1.1\n---\nschema: a\n",
	"malformed yaml":      "schema: a\n  bad: indent\n",
	"malformed yaml 2":    "schema: [a\n",
	"json stream":         "{\"schema\":\"a\",\"name\":\"x\"}\n{\"schema\":\"b\"}  {\"schema\":\"c\"}\n",
	"json numbers":        "{\"schema\":\"a\",\"v\":[1,1.0,-0,0.1,1e21,1E-7,123456789012345678,1.7976931348623157e308,5e-324,1e-400]}",
	"json big number":     "{\"schema\":\"a\",\"v\":1e400}",
	"json escapes":        "{\"schema\":\"a\",\"v\":\"\\u003c\\u0026\\/\\b\\f\\ud83d\\ude00\\ud800x\\udc00\\ud800\\u0041\\u2028\"}",
	"json dup keys":       "{\"schema\":\"a\",\"k\":1,\"k\":2,\"\\u006b\":3}",
	"json dup fold":       "{\"schema\":\"a\",\"Name\":1,\"name\":2}",
	"json then yaml":      "{\"schema\":\"a\"}\nschema: b\n",
	"json then yaml sep":  "{\"schema\":\"a\"}\n---\nschema: b\n",
	"json 2 then yaml":    "{\"schema\":\"a\"}{\"schema\":\"b\"}\nschema: c\n",
	"json trailing comma": "{\"schema\":\"a\"}\n{\"schema\":\"b\",}\n",
	"json single quote":   "{\"schema\": 'a'}\n",
	"json yaml flow":      "{schema: a, name: b}\n",
	"json garbage":        "{\"schema\":\"a\"}\nxy",
	"json garbage 4":      "{\"schema\":\"a\"}\n  xyz",
	"json nbsp":           "\u00a0{\"schema\":\"a\"}",
	"json null":           "{\"schema\":\"a\"}\nnull",
	"json array":          "{\"schema\":\"a\"}\n[1]\n",
	"json truncated":      "{\"schema\":\"a\"",
	"json no schema":      "{\"name\":\"a\"}",
	"json ws only":        "   \n\t  ",
	"json nested dup":     "{\"schema\":\"a\",\"o\":{\"b\":1,\"a\":2,\"b\":3}}",
	"json ctrl in str":    "{\"schema\":\"a\",\"v\":\"a\x01b\"}",
	"json deep fail":      "{\"schema\":\"a\"}\n{\"schema\":\"b\",\"v\":" + strings.Repeat("[", 10001) + "}",
	"late brace":          strings.Repeat(" ", 5000) + "{\"schema\":\"a\"}",
	"indent seq":          "schema: a\nentries:\n- name: x\n  replaces: y\n- name: z\n  skips:\n  - a\n  - b\nother:\n  - 1\n  -\n  - - nested\n",
	"empty values":        "schema: a\nk:\nl: \nm: # c\nseq:\n-\n- \n",
	"quoted keys":         "schema: a\n'q k': 1\n\"d\\tk\": 2\n\"\": 3\n",
	"special plain":       "schema: a\nurl: http://x.y/z?a=b#frag\nc: a:b\nd: -x\ne: a #c\nf: a#b\ng: '#'\nh: <<\ni: ? x\n",
	"colon end":           "schema: a\nk: a:\n",
	"key colon":           "schema: a\nk:v\n",
	"multiline key":       "schema: a\n\"k\n  x\": 1\n",
	"plain cont colon":    "schema: a\nk: a\n  b: c\n",
	"plain cont comment":  "schema: a\nk: a\n  # c\nz: 1\n",
	"seq in map value":    "schema: a\nk: - a\n",
	"wrong indent":        "schema: a\nm:\n    a: 1\n  b: 2\n",
	"literal keep end":    "schema: a\nk: |+\n  x\n\n",
	"literal at end":      "schema: a\nk: |\n  x",
	"literal empty":       "schema: a\nk: |\nz: 1\n",
	"literal lead blank":  "schema: a\nk: |\n\n   \n  x\nz: 1\n",
	"literal more blank":  "schema: a\nk: |\n     \n  x\nz: 1\n",
	"literal indicator":   "schema: a\nk: |1-\n  x\n z\n",
	"literal comment":     "schema: a\nk: | # c\n  x\n",
	"folded spaces":       "schema: a\nk: >\n  a\n    b\n  c\n\n  d\n",
	"nel ls":              "schema: a\nk: a\u0085b\nl: a\u2028b\n",
	"escaped unicode":     "schema: a\nk: \"\\u00e9\\U0001F600\\x41\"\n",
	"bad escape":          "schema: a\nk: \"\\q\"\n",
	"surrogate escape":    "schema: a\nk: \"\\ud800\"\n",
	"null root json":      "null",
	"string root json":    "{\"schema\":\"a\"}\"x\"",
	"seq top":             "- schema: a\n",
	"indented root":       "  schema: a\n  name: b\n",
	"float key":           "schema: a\n1.0: x\n1: y\n",
	"bool key dup":        "schema: a\ntrue: x\n\"true\": y\n",
	"quoted scalar tail":  "schema: a\nk: \"x\" y\n",
	"ampersand plain":     "schema: a\nk: a&b*c!d\n",
	"long plain key":      "schema: a\n" + strings.Repeat("k", 1100) + ": v\n",
	"nested maps":         "schema: a\nm:\n  n:\n    o: 1\n    p:\n      - q: 2\n        r: 3\n  s: 4\n",
	"seq of maps dash":    "schema: a\nl:\n  - a: 1\n    b: 2\n  - c: 3\n",
	"empty flow":          "schema: a\nm: {}\nl: []\nn: { }\n",
	"quote then colon":    "schema: a\n\"k\": v\n'l' : w\n",
}

func TestDifferentialEdgeCases(t *testing.T) {
	for name, in := range edgeCases {
		t.Run(name, func(t *testing.T) {
			diffAllPaths(t, name, []byte(in))
		})
	}
}

func TestTinyCatalogBytes(t *testing.T) {
	for _, dir := range []string{"../../testdata/fbc/tiny/configs", sharedFBC + "/tiny/configs"} {
		data, err := readFile(dir + "/catalog.yaml")
		if err != nil {
			t.Logf("skipping %s: %v", dir, err)
			continue
		}
		want, err := readFile(dir + "/expected_all.json")
		if err != nil {
			t.Fatal(err)
		}
		var all []byte
		if err := Parse(strings.NewReader(string(data)), func(o Object) error {
			all = append(all, o.Blob...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if string(all) != string(want) {
			t.Fatalf("%s: got\n%s\nwant\n%s", dir, all, want)
		}
	}
}
