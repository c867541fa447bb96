package metrics

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The Grafana dashboard of RSA's series, from the module's root.
const grafanaDashboard = "contrib/grafana/rsa.json"

// dashboard is what TestGrafanaDashboard reads of a Grafana dashboard's
// JSON model.
type dashboard struct {
	SchemaVersion int `json:"schemaVersion"`
	Templating    struct {
		List []templateVar `json:"list"`
	} `json:"templating"`
	Panels []dashboardPanel `json:"panels"`
}

// templateVar is one of a dashboard's variables.
type templateVar struct {
	Name       string           `json:"name"`
	Type       string           `json:"type"`
	Query      any              `json:"query"` // a string, or an object of the query editor's
	Definition string           `json:"definition"`
	Datasource *panelDatasource `json:"datasource"`
}

type panelDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashboardPanel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Collapsed   bool   `json:"collapsed"`
	GridPos     struct {
		X int `json:"x"`
		Y int `json:"y"`
		W int `json:"w"`
		H int `json:"h"`
	} `json:"gridPos"`
	Datasource  *panelDatasource `json:"datasource"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		RefID      string           `json:"refId"`
		Expr       string           `json:"expr"`
		Datasource *panelDatasource `json:"datasource"`
	} `json:"targets"`
	// A collapsed row's panels.
	Panels []dashboardPanel `json:"panels"`
}

// datasourceVar is how a panel names the dashboard's datasource variable:
// whoever imports the dashboard picks the Prometheus, no UID of ours.
const datasourceVar = "${datasource}"

// The Grafana dashboard shows only series that exist, with labels and
// label values they have, and every panel says what it shows and where
// the runbook is: a renamed metric, a misspelt label or state would draw
// an empty panel that looks like all is well.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("../..", grafanaDashboard))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", grafanaDashboard, err)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("%s: schemaVersion %d, want 36 or later (Grafana 9+, datasource by variable)", grafanaDashboard, d.SchemaVersion)
	}
	have := knownSeries(t)
	valid := labelValues(t)
	// Labels some series has, or Prometheus gives every target.
	anyLabel := map[string]bool{"job": true, "instance": true}
	for _, labels := range have {
		for l := range labels {
			anyLabel[l] = true
		}
	}
	found := map[string]bool{} // the series the dashboard's queries name
	// checkQuery checks one PromQL query (a panel's or a variable's).
	checkQuery := func(where, expr string) {
		sels, groups, err := scanPromQL(expr)
		if err != nil {
			t.Errorf("%s: %v in %q", where, err, expr)
			return
		}
		if len(sels) == 0 {
			t.Errorf("%s: no series in %q", where, expr)
		}
		for _, s := range sels {
			if s.metric == "" {
				t.Errorf("%s: a selector without a metric name in %q", where, expr)
				continue
			}
			found[s.metric] = true
			labels, ok := have[s.metric]
			if !ok {
				t.Errorf("%s: %s is no series rsa serve, rsa agent or rsa health --textfile exports (in %q)", where, s.metric, expr)
				continue
			}
			for _, m := range s.matchers {
				if !labels[m.label] && !(m.label == "job" || m.label == "instance") {
					t.Errorf("%s: %s has no label %s (it has %v; and job, instance)", where, s.metric, m.label, slices.Sorted(maps.Keys(labels)))
				}
				values, fixed := valid[m.label]
				if !fixed || strings.Contains(m.value, "$") {
					continue
				}
				for _, v := range strings.Split(m.value, "|") {
					if !slices.Contains(values, v) {
						t.Errorf("%s: %s matches %s=%q, which is never exported (it has %v)", where, s.metric, m.label, v, values)
					}
				}
			}
		}
		for _, l := range groups {
			if !anyLabel[l] {
				t.Errorf("%s: groups by %s, a label no series has, in %q", where, l, expr)
			}
		}
		for _, v := range regexp.MustCompile(`\$\{?(\w+)`).FindAllStringSubmatch(expr, -1) {
			// $__rate_interval and the like are Grafana's own.
			if !strings.HasPrefix(v[1], "__") && !slices.ContainsFunc(d.Templating.List, func(tv templateVar) bool { return tv.Name == v[1] }) {
				t.Errorf("%s: $%s is no variable of the dashboard's", where, v[1])
			}
		}
	}

	hasDatasourceVar := false
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			if v.Name == "datasource" && v.Query == "prometheus" {
				hasDatasourceVar = true
			}
		case "query":
			where := "variable " + v.Name
			if v.Datasource == nil || v.Datasource.UID != datasourceVar {
				t.Errorf("%s: datasource %+v, want uid %s", where, v.Datasource, datasourceVar)
			}
			q, _ := v.Query.(string)
			if q == "" {
				q = v.Definition
			}
			m := regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`).FindStringSubmatch(q)
			if m == nil {
				t.Errorf("%s: query %q, want label_values(SERIES, LABEL)", where, q)
				continue
			}
			checkQuery(where, m[1])
			if sels, _, err := scanPromQL(m[1]); err == nil && len(sels) == 1 && have[sels[0].metric] != nil &&
				!have[sels[0].metric][m[2]] && m[2] != "job" && m[2] != "instance" {
				t.Errorf("%s: %s has no label %s", where, sels[0].metric, m[2])
			}
		}
	}
	if !hasDatasourceVar {
		t.Errorf("%s: no variable datasource of type datasource, query prometheus", grafanaDashboard)
	}

	ids := map[int]string{}
	panels := 0
	var checkPanels func(ps []dashboardPanel)
	checkPanels = func(ps []dashboardPanel) {
		for i, p := range ps {
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if p.ID <= 0 {
				t.Errorf("%s: no id", where)
			} else if other, dup := ids[p.ID]; dup {
				t.Errorf("%s: id %d is also %q's", where, p.ID, other)
			}
			ids[p.ID] = p.Title
			if strings.TrimSpace(p.Title) == "" {
				t.Errorf("%s: no title", where)
			}
			g := p.GridPos
			if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
				t.Errorf("%s: gridPos %+v outside Grafana's 24 columns", where, g)
			}
			// A collapsed row's panels are laid out when it opens, in
			// place of the panels below it: each row's among themselves.
			for _, q := range ps[:i] {
				h := q.GridPos
				if g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H {
					t.Errorf("%s: gridPos %+v overlaps panel %d %q's %+v", where, g, q.ID, q.Title, h)
				}
			}
			if p.Type == "row" {
				if len(p.Panels) > 0 && !p.Collapsed {
					t.Errorf("%s: an open row holds panels: Grafana wants them after it", where)
				}
				checkPanels(p.Panels)
				continue
			}
			panels++
			checkRunbook(t, where, p.Description)
			if p.Datasource == nil || p.Datasource.UID != datasourceVar || p.Datasource.Type != "prometheus" {
				t.Errorf("%s: datasource %+v, want {prometheus %s}", where, p.Datasource, datasourceVar)
			}
			if p.FieldConfig.Defaults.Unit == "" {
				t.Errorf("%s: no unit", where)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: no query", where)
			}
			for _, tg := range p.Targets {
				if tg.Datasource != nil && tg.Datasource.UID != datasourceVar {
					t.Errorf("%s, query %s: datasource %+v, want uid %s", where, tg.RefID, tg.Datasource, datasourceVar)
				}
				checkQuery(fmt.Sprintf("%s, query %s", where, tg.RefID), tg.Expr)
			}
		}
	}
	checkPanels(d.Panels)
	// 44 panels and 34 series when written: a dashboard whose queries
	// moved where this test does not look must not pass as all present.
	if panels < 36 || len(found) < 28 {
		t.Errorf("%s: %d panels naming %d series (%v), want at least 36 and 28: has its JSON changed shape?",
			grafanaDashboard, panels, len(found), slices.Sorted(maps.Keys(found)))
	}
}

// checkRunbook checks that a panel's description says something and names
// a section of docs/operations.md (docs/FILE.md#anchor), and that every
// section it names exists.
func checkRunbook(t *testing.T, where, desc string) {
	t.Helper()
	if len(strings.Fields(desc)) < 8 {
		t.Errorf("%s: description %q says too little: what it shows, what a non-zero or red value means", where, desc)
	}
	operations := false
	for _, m := range regexp.MustCompile(`docs/([a-z]+)\.md#([a-z0-9-]+)`).FindAllStringSubmatch(desc, -1) {
		doc, err := os.ReadFile(filepath.Join("../../docs", m[1]+".md"))
		if err != nil {
			t.Errorf("%s: runbook %s: %v", where, m[0], err)
			continue
		}
		if !slices.Contains(anchors(string(doc)), m[2]) {
			t.Errorf("%s: runbook %s: docs/%s.md has no such section", where, m[0], m[1])
		}
		operations = operations || m[1] == "operations"
	}
	if !operations {
		t.Errorf("%s: description names no section of docs/operations.md (docs/operations.md#SECTION)", where)
	}
}

// selector is one series selector of a PromQL query: its metric name and
// label matchers.
type selector struct {
	metric   string
	matchers []labelMatcher
}

type labelMatcher struct{ label, op, value string }

var (
	// PromQL's aggregation operators, which by or without may follow
	// before their parenthesis.
	promAggregators = map[string]bool{"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true,
		"stdvar": true, "count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
		"limitk": true, "limit_ratio": true}
	// Keywords that a list of label names follows.
	promLabelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	// Other keywords, and the number literals that look like words.
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
		"inf": true, "nan": true}
)

// scanPromQL reads the series selectors of a PromQL query, as Grafana
// sends it (its variables, $job or ${job}, left in), and the label names
// its by, without, on, ignoring, group_left and group_right clauses list.
// It is a scanner, not a parser: it finds names, and leaves checking the
// query's syntax to Prometheus.
func scanPromQL(q string) (sels []selector, groups []string, err error) {
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
	}
	skipSpace := func(i int) int {
		for i < len(q) && strings.ContainsRune(" \t\r\n", rune(q[i])) {
			i++
		}
		return i
	}
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			_, n, err := scanPromString(q[i:])
			if err != nil {
				return nil, nil, err
			}
			i += n
		case c == '[': // a range or subquery: durations, $__rate_interval
			j := strings.IndexByte(q[i:], ']')
			if j < 0 {
				return nil, nil, fmt.Errorf("no ] after [ at %d", i)
			}
			i += j + 1
		case c == '$': // a Grafana variable
			i++
			if i < len(q) && q[i] == '{' {
				j := strings.IndexByte(q[i:], '}')
				if j < 0 {
					return nil, nil, fmt.Errorf("no } after ${ at %d", i)
				}
				i += j + 1
			}
			for i < len(q) && isIdent(q[i], false) {
				i++
			}
		case c == '{': // a selector of no metric name
			ms, n, err := scanMatchers(q[i:])
			if err != nil {
				return nil, nil, err
			}
			sels = append(sels, selector{matchers: ms})
			i += n
		case c >= '0' && c <= '9' || c == '.': // a number or a duration
			for i < len(q) && (isIdent(q[i], false) || q[i] == '.') {
				i++
			}
		case isIdent(c, true):
			j := i
			for j < len(q) && isIdent(q[j], false) {
				j++
			}
			word := q[i:j]
			next := skipSpace(j)
			i = j
			switch {
			case promLabelLists[word]:
				if next < len(q) && q[next] == '(' {
					end := strings.IndexByte(q[next:], ')')
					if end < 0 {
						return nil, nil, fmt.Errorf("no ) after %s (", word)
					}
					for _, l := range strings.Split(q[next+1:next+end], ",") {
						if l = strings.TrimSpace(l); l != "" {
							groups = append(groups, l)
						}
					}
					i = next + end + 1
				}
			case next < len(q) && q[next] == '(', promAggregators[word], promKeywords[strings.ToLower(word)]:
				// a function, an aggregation or a keyword
			default:
				s := selector{metric: word}
				if next < len(q) && q[next] == '{' {
					ms, n, err := scanMatchers(q[next:])
					if err != nil {
						return nil, nil, fmt.Errorf("%s: %w", word, err)
					}
					s.matchers = ms
					i = next + n
				}
				sels = append(sels, s)
			}
		default: // operators, parentheses, commas
			i++
		}
	}
	return sels, groups, nil
}

// scanMatchers reads the label matchers of a selector, {...}, from the
// start of s, and says how many bytes they took.
func scanMatchers(s string) ([]labelMatcher, int, error) {
	var ms []labelMatcher
	i := 1
	for {
		for i < len(s) && strings.ContainsRune(" \t\r\n,", rune(s[i])) {
			i++
		}
		if i >= len(s) {
			return nil, 0, fmt.Errorf("no } in %q", s)
		}
		if s[i] == '}' {
			return ms, i + 1, nil
		}
		j := i
		for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		m := labelMatcher{label: s[i:j]}
		rest := strings.TrimLeft(s[j:], " ")
		for _, op := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(rest, op) {
				m.op = op
				break
			}
		}
		if m.label == "" || m.op == "" {
			return nil, 0, fmt.Errorf("no label matcher at %q", s[i:])
		}
		k := len(s) - len(rest) + len(m.op)
		for k < len(s) && s[k] == ' ' {
			k++
		}
		v, n, err := scanPromString(s[k:])
		if err != nil {
			return nil, 0, fmt.Errorf("label %s: %w", m.label, err)
		}
		m.value = v
		ms = append(ms, m)
		i = k + n
	}
}

// scanPromString reads a PromQL string literal from the start of s: its
// text (escapes left as they are) and how many bytes it took.
func scanPromString(s string) (string, int, error) {
	if s == "" || !strings.ContainsRune("\"'`", rune(s[0])) {
		return "", 0, fmt.Errorf("no string at %q", s)
	}
	quote := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && quote != '`':
			i++
		case s[i] == quote:
			return s[1:i], i + 1, nil
		}
	}
	return "", 0, fmt.Errorf("unterminated string %q", s)
}

// The scanner finds the series, matchers and grouping labels of the
// queries the dashboard has, and no function, keyword or variable.
func TestScanPromQL(t *testing.T) {
	for _, tc := range []struct {
		q      string
		want   string // each selector, metric{label op value,...}, then | and the grouping labels
		hasErr bool
	}{
		{q: `sum by (rsa_state) (rsa_jobs{job=~"$job", rsa_state="STAGE_OUT_FAILED"}) or vector(0)`,
			want: `rsa_jobs{job=~$job,rsa_state=STAGE_OUT_FAILED} | rsa_state`},
		{q: `histogram_quantile(0.95, sum(rate(rsa_phase_duration_seconds_bucket{phase!="x"}[$__rate_interval])) by (le))`,
			want: `rsa_phase_duration_seconds_bucket{phase!=x} | le`},
		{q: "(time() - max_over_time(timestamp((a or sum(b) * 0) == 0)[7d:1m])) and on () (c > 0) offset 5m or on() d * 0 + 7 * 86400",
			want: `a b c d`},
		{q: `x * on (job, instance) group_left (node) y{node=~'a|b', l="q\"}"} / Inf + 1e3`,
			want: `x y{node=~a|b,l=q\"}} | job instance node`},
		{q: `count(up{job="${job}"} unless on (version) z)`, want: `up{job=${job}} z | version`},
		{q: `{__name__="rsa_jobs"}`, want: `{__name__=rsa_jobs}`},
		{q: `rsa_jobs{job="a"`, hasErr: true},
		{q: `rsa_jobs{job}`, hasErr: true},
		{q: `rate(x[5m`, hasErr: true},
	} {
		sels, groups, err := scanPromQL(tc.q)
		if tc.hasErr {
			if err == nil {
				t.Errorf("scanPromQL(%q): no error", tc.q)
			}
			continue
		}
		if err != nil {
			t.Errorf("scanPromQL(%q): %v", tc.q, err)
			continue
		}
		var got []string
		for _, s := range sels {
			var ms []string
			for _, m := range s.matchers {
				ms = append(ms, m.label+m.op+m.value)
			}
			if ms != nil {
				s.metric += "{" + strings.Join(ms, ",") + "}"
			}
			got = append(got, s.metric)
		}
		g := strings.Join(got, " ")
		if len(groups) > 0 {
			g += " | " + strings.Join(groups, " ")
		}
		if g != tc.want {
			t.Errorf("scanPromQL(%q) = %s, want %s", tc.q, g, tc.want)
		}
	}
}
