package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// The SES fake is Amazon SES (API v2, SendEmail) on loopback, as unkind as
// the Meta fake: a send takes seconds, a request that arrived whole is
// accepted and delivered even when Herald hung up before the answer, and
// the outcome arrives later as SES publishes it through a configuration
// set's SNS event destination: a Send event, then a Delivery event, each a
// signed SNS notification of its own, after a random delay, sometimes out
// of order and sometimes twice, retried until Herald answers 2xx. Every
// event carries the mail's tags, message_id among them, which is how
// Herald adopts a send whose answer it never read. It counts every
// accepted call per message, by the message_id tag Herald puts on a send,
// else by the recipient, since the suite gives every e-mail message an
// address of its own.

// SES account settings the suite creates its account with: the fake checks
// the access key in the request's signature (not the signature itself) and
// the configuration set, and publishes to the topic.
const (
	sesRegion      = "eu-central-1"
	sesAccessKeyID = "AKIACHAOSFAKE0000001"
	sesSecretKey   = "chaosFakeSecretAccessKey0123456789abcdef"
	sesSender      = "bookings@chaos.example"
	sesConfigSet   = "herald-chaos"
	sesTopicARN    = "arn:aws:sns:eu-central-1:123456789012:herald-chaos-ses-events"
)

// sesCall is one send the fake accepted.
type sesCall struct {
	At        time.Time // when the request had arrived whole
	MessageID string    // SES's id for the mail
	// Cut: Herald had hung up before the answer, which SES does not notice.
	Cut bool
}

// sesFake serves SendEmail and publishes the events.
type sesFake struct {
	srv     *httptest.Server
	signer  *snsSigner
	client  *http.Client
	ctx     context.Context // ends the event posts' retries
	cancel  context.CancelFunc
	lat     atomic.Pointer[latency]
	hookURL atomic.Pointer[string] // Herald's /webhooks/ses

	active   atomic.Int64 // calls being worked on, whether Herald still waits or not
	accepted atomic.Int64
	cut      atomic.Int64 // calls accepted after Herald hung up
	outbox   atomic.Int64 // events not yet answered 2xx by Herald
	posts    atomic.Int64 // event posts made, redeliveries and retries included
	retries  atomic.Int64 // event posts Herald did not answer 2xx

	mu    sync.Mutex
	rng   *rand.Rand
	seq   int
	calls map[string][]sesCall // message key -> accepted calls
	last  map[string]string    // SES message id -> the last event published for it
}

func newSESFake(lat latency, seed uint64) (*sesFake, error) {
	signer, err := newSNSSigner()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &sesFake{
		signer: signer, ctx: ctx, cancel: cancel,
		client: &http.Client{Timeout: 10 * time.Second},
		rng:    rand.New(rand.NewPCG(seed, 0x736573)),
		calls:  map[string][]sesCall{}, last: map[string]string{},
	}
	f.lat.Store(&lat)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v2/email/outbound-emails", f.send)
	mux.HandleFunc("GET "+snsCertPath, signer.serveCert)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		sesError(w, http.StatusBadRequest, "BadRequestException", "Unsupported request: "+r.Method+" "+r.URL.Path)
	})
	f.srv = httptest.NewServer(mux)
	signer.certURL = f.srv.URL + snsCertPath
	return f, nil
}

// URL is the endpoint the account names (endpoint_url), which a herald in
// dev accepts on loopback.
func (f *sesFake) URL() string { return f.srv.URL }

// setLatency changes how long the calls that arrive from now on take.
func (f *sesFake) setLatency(l latency) { f.lat.Store(&l) }

// setHook tells the fake where SNS posts the events: Herald's
// /webhooks/ses.
func (f *sesFake) setHook(url string) { f.hookURL.Store(&url) }

// Close ends the retries of events nobody will take any more.
func (f *sesFake) Close() {
	f.cancel()
	f.srv.Close()
}

// sesError answers as SES v2 does when it refuses a call.
func sesError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-amzn-ErrorType", code)
	w.Header().Set("x-amzn-RequestId", uuid.NewString())
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

// sesSendBody is what the fake reads of a SendEmail request.
type sesSendBody struct {
	FromEmailAddress     string
	ConfigurationSetName string
	Destination          struct{ ToAddresses []string }
	EmailTags            []struct{ Name, Value string }
	Content              struct {
		Simple *struct {
			Subject struct{ Data string }
		}
	}
}

// tag is the value of the mail's tag name, "" without one.
func (b *sesSendBody) tag(name string) string {
	for _, t := range b.EmailTags {
		if t.Name == name {
			return t.Value
		}
	}
	return ""
}

// key is what the fake counts a send by: Herald's message id when the
// send's tags name it, else the recipient.
func (b *sesSendBody) key() string {
	if id := b.tag("message_id"); id != "" {
		return id
	}
	return "to:" + b.Destination.ToAddresses[0]
}

// send is POST /v2/email/outbound-emails. The body is read whole first:
// from then on SES has the mail, and the latency, the acceptance and the
// events follow whether Herald waits for the answer or not.
func (f *sesFake) send(w http.ResponseWriter, r *http.Request) {
	f.active.Add(1)
	defer f.active.Add(-1)
	if !strings.Contains(r.Header.Get("Authorization"), "Credential="+sesAccessKeyID+"/") {
		sesError(w, http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid.")
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return // cut before it arrived whole: SES never had it
	}
	var b sesSendBody
	switch {
	case json.Unmarshal(raw, &b) != nil || len(b.Destination.ToAddresses) != 1 || b.Content.Simple == nil:
		sesError(w, http.StatusBadRequest, "BadRequestException", "Invalid request")
		return
	case !strings.Contains(b.FromEmailAddress, sesSender):
		sesError(w, http.StatusBadRequest, "MessageRejected", "Email address is not verified. The following identities failed the check: "+b.FromEmailAddress)
		return
	case b.ConfigurationSetName != sesConfigSet:
		sesError(w, http.StatusNotFound, "NotFoundException", "Configuration set <"+b.ConfigurationSetName+"> does not exist.")
		return
	}
	l := f.lat.Load()
	f.mu.Lock()
	d := l.Min
	if l.Max > l.Min {
		d += time.Duration(f.rng.Int64N(int64(l.Max - l.Min)))
	}
	f.mu.Unlock()
	// Not a wait for a condition: the time SES takes is the experiment's
	// input, and it does not end when Herald hangs up.
	time.Sleep(d)

	key, at := b.key(), time.Now()
	cut := r.Context().Err() != nil
	f.mu.Lock()
	f.seq++
	id := fmt.Sprintf("0107019a%08x-%s-000000", f.seq, uuid.NewString())
	f.calls[key] = append(f.calls[key], sesCall{At: at, MessageID: id, Cut: cut})
	f.mu.Unlock()
	f.accepted.Add(1)
	if cut {
		f.cut.Add(1)
	}
	f.publish(id, at, &b)

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-amzn-RequestId", uuid.NewString())
	_ = json.NewEncoder(w).Encode(map[string]string{"MessageId": id})
}

// publish posts the events of an accepted send: Send, then Delivery, each
// as a notification of its own after a random delay of up to a second, so
// they overtake each other; one in ten is posted twice, as SNS delivers
// at least once.
func (f *sesFake) publish(id string, at time.Time, b *sesSendBody) {
	type post struct {
		body  []byte
		delay time.Duration
	}
	var posts []post
	f.mu.Lock()
	f.last[id] = "Delivery"
	for i, kind := range []string{"Send", "Delivery"} {
		env, err := f.signer.notification(sesTopicARN, sesEvent(kind, id, at, at.Add(time.Duration(i)*500*time.Millisecond), b))
		if err != nil {
			panic(err) // signing with a key of our own cannot fail
		}
		copies := 1
		if f.rng.IntN(10) == 0 {
			copies = 2
		}
		for range copies {
			posts = append(posts, post{env, time.Duration(f.rng.Int64N(int64(time.Second)))})
		}
	}
	f.mu.Unlock()
	for _, p := range posts {
		f.outbox.Add(1)
		go func() {
			defer f.outbox.Add(-1)
			// The delay is SES's and SNS's, part of the experiment: events
			// arrive some time after the send, in no particular order.
			select {
			case <-f.ctx.Done():
				return
			case <-time.After(p.delay):
			}
			f.deliver(p.body)
		}()
	}
}

// sesTime is SES's timestamp format.
const sesTime = "2006-01-02T15:04:05.000Z"

// sesEvent is one SES event as a configuration set publishes it to SNS:
// the mail with its tags (SES's own and the sender's, each an array of
// strings), and the event's own part.
func sesEvent(kind, id string, sent, at time.Time, b *sesSendBody) string {
	to := b.Destination.ToAddresses[0]
	tags := map[string][]string{
		"ses:configuration-set": {b.ConfigurationSetName},
		"ses:source-ip":         {"127.0.0.1"},
		"ses:from-domain":       {"chaos.example"},
		"ses:caller-identity":   {"herald-chaos"},
		"ses:operation":         {"SendEmail"},
	}
	for _, t := range b.EmailTags {
		tags[t.Name] = []string{t.Value}
	}
	if kind == "Delivery" {
		tags["ses:outgoing-ip"] = []string{"54.240.8.1"}
	}
	ev := map[string]any{
		"eventType": kind,
		"mail": map[string]any{
			"timestamp": sent.UTC().Format(sesTime), "source": sesSender,
			"sourceArn":        "arn:aws:ses:" + sesRegion + ":123456789012:identity/chaos.example",
			"sendingAccountId": "123456789012", "messageId": id, "destination": []string{to},
			"headersTruncated": false,
			"headers":          []map[string]string{{"name": "From", "value": sesSender}, {"name": "To", "value": to}},
			"commonHeaders":    map[string]any{"from": []string{sesSender}, "to": []string{to}, "messageId": id, "subject": b.Content.Simple.Subject.Data},
			"tags":             tags,
		},
	}
	switch kind {
	case "Send":
		ev["send"] = map[string]any{}
	case "Delivery":
		ev["delivery"] = map[string]any{
			"timestamp": at.UTC().Format(sesTime), "processingTimeMillis": at.Sub(sent).Milliseconds(),
			"recipients": []string{to}, "smtpResponse": "250 2.0.0 OK chaos", "reportingMTA": "a7-12.smtp-out.eu-central-1.amazonses.com",
		}
	}
	raw, _ := json.Marshal(ev)
	return string(raw)
}

// deliver posts one notification until Herald answers 2xx, as SNS retries
// an HTTP subscription: a web process killed or a database restarting
// loses no event.
func (f *sesFake) deliver(body []byte) {
	var env struct{ MessageId, TopicArn string }
	_ = json.Unmarshal(body, &env)
	header := http.Header{}
	header.Set("Content-Type", "text/plain; charset=UTF-8")
	header.Set("x-amz-sns-message-type", "Notification")
	header.Set("x-amz-sns-message-id", env.MessageId)
	header.Set("x-amz-sns-topic-arn", env.TopicArn)
	header.Set("x-amz-sns-subscription-arn", env.TopicArn+":chaos")
	header.Set("User-Agent", "Amazon Simple Notification Service Agent")
	redeliver(f.ctx, f.client, &f.hookURL, &f.posts, &f.retries, body, header)
}

// idle says whether no call is being worked on and every event is posted.
func (f *sesFake) idle() bool { return f.active.Load() == 0 && f.outbox.Load() == 0 }

// waitCalls waits until no call is being worked on: after a kill, SES
// still finishes the calls the dead process made.
func (f *sesFake) waitCalls() {
	deadline := time.Now().Add(time.Minute)
	for f.active.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// duplicates lists the messages accepted more than once, by key.
func (f *sesFake) duplicates() []metaDup {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []metaDup
	for k, cs := range f.calls {
		if len(cs) > 1 {
			d := metaDup{Key: k}
			for _, c := range cs {
				d.Calls = append(d.Calls, metaCall{At: c.At, Wamid: c.MessageID, Cut: c.Cut})
			}
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Calls[0].At.Before(out[j].Calls[0].At) })
	return out
}

// acceptedKeys lists every message key the fake accepted.
func (f *sesFake) acceptedKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return mapKeys(f.calls)
}

// lastEvent is the last event the fake published for an SES message id it
// issued, "" for one it never issued.
func (f *sesFake) lastEvent(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last[id]
}
