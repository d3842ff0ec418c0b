package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/app"
)

// The Meta fake is Meta's WhatsApp Cloud API on loopback, as unkind as the
// real one: a send takes seconds, a request that arrived whole is accepted
// and delivered even when Herald hung up before the answer, and the outcome
// arrives later as signed status webhooks, each status in a post of its
// own, after a random delay, sometimes out of order and sometimes twice, and
// retried until Herald answers 2xx. It counts every accepted call per
// message, which is how a second WhatsApp message to the same person shows:
// by the biz_opaque_callback_data Herald puts on a send ("herald:<message
// id>"), else by the recipient, since the suite gives every WhatsApp
// message a phone number of its own.

// opaquePrefix starts the biz_opaque_callback_data Herald puts on a send.
const opaquePrefix = "herald:"

// Meta account settings the suite creates its account with; the fake checks
// the access token and the number, and signs with the app secret.
const (
	metaPhoneNumberID = "106540352242922"
	metaWABAID        = "102290129340398"
	metaAccessToken   = "EAAchaosFakeSystemUserToken0123456789"
	metaAppSecret     = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
)

// metaFailedCode is the failed status the fake reports for the share of
// messages it is told to fail: 131026, undeliverable.
const metaFailedCode = 131026

// latency is how long a call takes: a random duration in [Min, Max]. As a
// flag it reads "1s-3s", or "30s" for a fixed one.
type latency struct{ Min, Max time.Duration }

func (l *latency) String() string {
	if l == nil {
		return ""
	}
	if l.Min == l.Max {
		return l.Min.String()
	}
	return l.Min.String() + "-" + l.Max.String()
}

// Set parses "1s-3s" or "30s".
func (l *latency) Set(s string) error {
	lo, hi, ranged := strings.Cut(s, "-")
	min, err := time.ParseDuration(strings.TrimSpace(lo))
	if err != nil {
		return err
	}
	max := min
	if ranged {
		if max, err = time.ParseDuration(strings.TrimSpace(hi)); err != nil {
			return err
		}
	}
	if min < 0 || max < min {
		return fmt.Errorf("%q is not a latency from a shorter to a longer duration", s)
	}
	l.Min, l.Max = min, max
	return nil
}

// metaCall is one send the fake accepted.
type metaCall struct {
	At    time.Time // when the request had arrived whole
	Wamid string
	// Cut: Herald had hung up before the answer, which Meta does not notice.
	Cut bool
}

// metaFake serves the Graph API calls Herald makes and posts the statuses.
type metaFake struct {
	srv       *httptest.Server
	failShare float64
	templates []byte          // the GET message_templates answer
	approved  map[string]bool // "name/language" of each template there
	client    *http.Client
	ctx       context.Context // ends the status posts' retries
	cancel    context.CancelFunc
	lat       atomic.Pointer[latency]
	hookURL   atomic.Pointer[string] // Herald's webhook URL for the account

	active   atomic.Int64 // calls being worked on, whether Herald still waits or not
	accepted atomic.Int64
	cut      atomic.Int64 // calls accepted after Herald hung up
	outbox   atomic.Int64 // statuses not yet answered 2xx by Herald
	posts    atomic.Int64 // status posts made, redeliveries and retries included
	retries  atomic.Int64 // status posts Herald did not answer 2xx
	asTpl    atomic.Int64 // sends accepted as templates rather than text

	mu     sync.Mutex
	rng    *rand.Rand
	seq    int
	calls  map[string][]metaCall // message key -> accepted calls
	failed map[string]bool       // message keys given a failed status
	last   map[string]string     // wamid -> the last status reported for it
}

func newMetaFake(lat latency, failShare float64, seed uint64) (*metaFake, error) {
	tpl, approved, err := approvedTemplates()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &metaFake{
		failShare: failShare, templates: tpl, approved: approved, ctx: ctx, cancel: cancel,
		client: &http.Client{Timeout: 10 * time.Second},
		rng:    rand.New(rand.NewPCG(seed, 0x6d657461)),
		calls:  map[string][]metaCall{}, failed: map[string]bool{}, last: map[string]string{},
	}
	f.lat.Store(&lat)
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	return f, nil
}

// URL is the Graph API root Herald's adapter is pointed at
// (HERALD_META_BASE_URL).
func (f *metaFake) URL() string { return f.srv.URL }

// setLatency changes how long the calls that arrive from now on take.
func (f *metaFake) setLatency(l latency) { f.lat.Store(&l) }

// setHook tells the fake where to post the statuses: Herald's webhook URL
// for the account, known once the account exists.
func (f *metaFake) setHook(url string) { f.hookURL.Store(&url) }

// Close ends the retries of statuses nobody will take any more and waits
// for the calls still being worked on.
func (f *metaFake) Close() {
	f.cancel()
	f.srv.Close()
}

// approvedTemplates is the template list Meta would hold for a tenant that
// submitted every default WhatsApp text and had it approved: what Herald's
// sync reads before the dispatcher may open a conversation with a template.
func approvedTemplates() ([]byte, map[string]bool, error) {
	type component struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type tpl struct {
		ID         string      `json:"id"`
		Name       string      `json:"name"`
		Language   string      `json:"language"`
		Status     string      `json:"status"`
		Category   string      `json:"category"`
		Components []component `json:"components"`
	}
	var data []tpl
	seen := map[string]bool{}
	for i, d := range app.DefaultTemplates() {
		s := d.WhatsApp
		if s == nil || seen[s.Name+"/"+s.Language] {
			continue
		}
		seen[s.Name+"/"+s.Language] = true
		data = append(data, tpl{ID: strconv.Itoa(1187366262797000 + i), Name: s.Name, Language: s.Language,
			Status: app.MetaTemplateApproved, Category: s.Category, Components: []component{{Type: "BODY", Text: s.Body}}})
	}
	if len(data) == 0 {
		return nil, nil, fmt.Errorf("no default WhatsApp text has a Meta template")
	}
	body, err := json.Marshal(map[string]any{"data": data, "paging": map[string]any{"cursors": map[string]string{"before": "MAZDZD", "after": "MAZDZD"}}})
	return body, seen, err
}

// graphError answers as the Graph API does when it refuses a call.
func graphError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": fmt.Sprintf("(#%d) %s", code, msg), "type": "OAuthException", "code": code,
		"error_data": map[string]string{"messaging_product": "whatsapp", "details": msg}, "fbtrace_id": "AchaosFake"}})
}

func (f *metaFake) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+metaAccessToken {
		graphError(w, http.StatusUnauthorized, 190, "Invalid OAuth access token.")
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && len(parts) == 3 && parts[1] == metaWABAID && parts[2] == "message_templates":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(f.templates)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[1] == metaPhoneNumberID && parts[2] == "messages":
		f.send(w, r)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[1] == metaWABAID && parts[2] == "subscribed_apps":
		// Activation registers Herald's app on the WABA.
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"success":true}`))
	default:
		graphError(w, http.StatusBadRequest, 100, "Unsupported request: "+r.Method+" "+r.URL.Path)
	}
}

// sendBody is what the fake reads of a send.
type sendBody struct {
	MessagingProduct string `json:"messaging_product"`
	To               string `json:"to"`
	Type             string `json:"type"`
	Opaque           string `json:"biz_opaque_callback_data"`
	Text             *struct {
		Body string `json:"body"`
	} `json:"text"`
	Template *struct {
		Name     string `json:"name"`
		Language struct {
			Code string `json:"code"`
		} `json:"language"`
	} `json:"template"`
}

// key is what the fake counts a send by: Herald's message id when the send
// names it, else the recipient.
func (b *sendBody) key() string {
	if id, ok := strings.CutPrefix(b.Opaque, opaquePrefix); ok && id != "" {
		return id
	}
	return "to:" + b.To
}

// send is POST /{version}/{phone_number_id}/messages. The body is read
// whole first: from then on Meta has the message, and the latency, the
// acceptance and the statuses follow whether Herald waits for the answer or
// not.
func (f *metaFake) send(w http.ResponseWriter, r *http.Request) {
	f.active.Add(1)
	defer f.active.Add(-1)
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return // cut before it arrived whole: Meta never had it
	}
	var b sendBody
	switch {
	case json.Unmarshal(raw, &b) != nil || b.MessagingProduct != "whatsapp" || b.To == "":
		graphError(w, http.StatusBadRequest, 100, "Invalid parameter")
		return
	case b.Type == "text" && (b.Text == nil || b.Text.Body == ""):
		graphError(w, http.StatusBadRequest, 100, "Invalid parameter: text.body is required")
		return
	case b.Type == "template" && (b.Template == nil || !f.approved[b.Template.Name+"/"+b.Template.Language.Code]):
		graphError(w, http.StatusBadRequest, 132001, "Template name does not exist in the translation")
		return
	case b.Type != "text" && b.Type != "template":
		graphError(w, http.StatusBadRequest, 100, "Unsupported message type "+b.Type)
		return
	}
	l := f.lat.Load()
	f.mu.Lock()
	d := l.Min
	if l.Max > l.Min {
		d += time.Duration(f.rng.Int64N(int64(l.Max - l.Min)))
	}
	f.mu.Unlock()
	// Not a wait for a condition: the time Meta takes is the experiment's
	// input, and it does not end when Herald hangs up.
	time.Sleep(d)

	key, at := b.key(), time.Now()
	cut := r.Context().Err() != nil
	f.mu.Lock()
	f.seq++
	wamid := fmt.Sprintf("wamid.HBgNChaos%08dFQIAERgS%s", f.seq, strings.ToUpper(strconv.FormatUint(f.rng.Uint64(), 16)))
	first := len(f.calls[key]) == 0
	f.calls[key] = append(f.calls[key], metaCall{At: at, Wamid: wamid, Cut: cut})
	if first && f.failShare > 0 && f.rng.Float64() < f.failShare {
		f.failed[key] = true
	}
	failed := f.failed[key]
	f.mu.Unlock()
	f.accepted.Add(1)
	if b.Type == "template" {
		f.asTpl.Add(1)
	}
	if cut {
		f.cut.Add(1)
	}
	f.report(key, wamid, b.To, b.Opaque, failed)

	waID := strings.TrimPrefix(b.To, "+")
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"messaging_product": "whatsapp",
		"contacts":          []map[string]string{{"input": b.To, "wa_id": waID}},
		"messages":          []map[string]string{{"id": wamid, "message_status": "accepted"}},
	})
}

// report posts the statuses of an accepted send: sent, then delivered and
// for some read, or sent and failed. Each goes in a post of its own after a
// random delay of up to a second, so they overtake each other, and one in
// ten is posted twice.
func (f *metaFake) report(key, wamid, to, opaque string, failed bool) {
	statuses := []string{"sent", "delivered"}
	f.mu.Lock()
	switch {
	case failed:
		statuses = []string{"sent", "failed"}
	case f.rng.IntN(3) == 0:
		statuses = append(statuses, "read")
	}
	f.last[wamid] = statuses[len(statuses)-1]
	type post struct {
		body  []byte
		delay time.Duration
	}
	var posts []post
	now := time.Now().Unix()
	for i, s := range statuses {
		body := statusBody(wamid, s, now+int64(i), strings.TrimPrefix(to, "+"), opaque)
		copies := 1
		if f.rng.IntN(10) == 0 {
			copies = 2
		}
		for range copies {
			posts = append(posts, post{body, time.Duration(f.rng.Int64N(int64(time.Second)))})
		}
	}
	f.mu.Unlock()
	for _, p := range posts {
		f.outbox.Add(1)
		go func() {
			defer f.outbox.Add(-1)
			// The delay is Meta's, part of the experiment: statuses arrive
			// some time after the send, in no particular order.
			select {
			case <-f.ctx.Done():
				return
			case <-time.After(p.delay):
			}
			f.deliver(p.body)
		}()
	}
}

// statusBody is one status webhook, as Meta posts it.
func statusBody(wamid, status string, at int64, recipient, opaque string) []byte {
	st := map[string]any{"id": wamid, "status": status, "timestamp": strconv.FormatInt(at, 10), "recipient_id": recipient}
	if opaque != "" {
		st["biz_opaque_callback_data"] = opaque
	}
	switch status {
	case "sent", "delivered":
		st["conversation"] = map[string]any{"id": "chaos" + wamid[len(wamid)-12:], "origin": map[string]string{"type": "utility"}}
		st["pricing"] = map[string]any{"billable": true, "pricing_model": "PMP", "category": "utility", "type": "regular"}
	case "failed":
		st["errors"] = []map[string]any{{"code": metaFailedCode, "title": "Message undeliverable", "message": "Message undeliverable",
			"error_data": map[string]string{"details": "Message Undeliverable."}}}
	}
	body, _ := json.Marshal(map[string]any{
		"object": "whatsapp_business_account",
		"entry": []map[string]any{{"id": metaWABAID, "changes": []map[string]any{{"field": "messages", "value": map[string]any{
			"messaging_product": "whatsapp",
			"metadata":          map[string]string{"display_phone_number": "4930901820", "phone_number_id": metaPhoneNumberID},
			"statuses":          []any{st},
		}}}}},
	})
	return body
}

// deliver posts one status until Herald answers 2xx, as Meta retries: a web
// process killed or a database restarting loses no status.
func (f *metaFake) deliver(body []byte) {
	mac := hmac.New(sha256.New, []byte(metaAppSecret))
	mac.Write(body)
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	redeliver(f.ctx, f.client, &f.hookURL, &f.posts, &f.retries, body, header)
}

// redeliver posts body with header to the URL hook holds (none yet: it
// waits) until the answer is 2xx, as Meta and SNS retry, counting every
// post and every one not answered 2xx. The pause between tries is the
// provider's pacing, not a wait for a condition.
func redeliver(ctx context.Context, client *http.Client, hook *atomic.Pointer[string], posts, retries *atomic.Int64, body []byte, header http.Header) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if url := hook.Load(); url != nil {
			posts.Add(1)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, *url, bytes.NewReader(body))
			req.Header = header.Clone()
			resp, err := client.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					return
				}
			}
			retries.Add(1)
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// idle says whether no call is being worked on and every status is posted.
func (f *metaFake) idle() bool { return f.active.Load() == 0 && f.outbox.Load() == 0 }

// waitCalls waits until no call is being worked on: after a kill, Meta
// still finishes the calls the dead process made.
func (f *metaFake) waitCalls() {
	deadline := time.Now().Add(time.Minute)
	for f.active.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// metaDup is a message the fake accepted more than once.
type metaDup struct {
	Key   string
	Calls []metaCall
}

// duplicates lists the messages accepted more than once, by key.
func (f *metaFake) duplicates() []metaDup {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []metaDup
	for k, cs := range f.calls {
		if len(cs) > 1 {
			out = append(out, metaDup{k, append([]metaCall(nil), cs...)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Calls[0].At.Before(out[j].Calls[0].At) })
	return out
}

// acceptedKeys lists every message key the fake accepted.
func (f *metaFake) acceptedKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return mapKeys(f.calls)
}

// lastStatus is the last status the fake reported for a wamid it issued,
// "" for one it never issued.
func (f *metaFake) lastStatus(wamid string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last[wamid]
}

// failedKeys lists the message keys given a failed status.
func (f *metaFake) failedKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.failed))
	for k := range f.failed {
		out = append(out, k)
	}
	return out
}

// describe is a duplicate's calls for the report: when each was accepted,
// and which ones Herald had hung up on.
func (d metaDup) describe(start time.Time) string {
	parts := make([]string, len(d.Calls))
	for i, c := range d.Calls {
		parts[i] = fmt.Sprintf("t+%.1fs", c.At.Sub(start).Seconds())
		if c.Cut {
			parts[i] += " (hung up)"
		}
	}
	return strings.Join(parts, ", ")
}
