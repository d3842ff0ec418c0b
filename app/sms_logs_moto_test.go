package app_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider/sns"
)

// motoAccount is the AWS account id moto answers GetCallerIdentity with.
const motoAccount = "123456789012"

// startMoto starts moto's server (moto 5) on a free loopback port and
// returns its URL once it answers. Without moto_server on PATH the test is
// skipped, unless HERALD_TEST_TOOLS=1 and HERALD_REQUIRE_MOTO=1 say the
// machine must have it.
func startMoto(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		if os.Getenv("HERALD_TEST_TOOLS") == "1" && os.Getenv("HERALD_REQUIRE_MOTO") == "1" {
			t.Fatalf("moto_server is not on PATH, and HERALD_REQUIRE_MOTO=1 requires it (pip install 'moto[server]==5.2.1')")
		}
		t.Skip("moto_server is not on PATH: the CloudWatch Logs emulator test is skipped (install moto[server] 5.2.1; HERALD_TEST_TOOLS=1 HERALD_REQUIRE_MOTO=1 makes its absence a failure)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	if testing.Verbose() {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	// Wait for it to answer (Python starts slowly on a busy machine), or
	// for it to die.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/moto-api/", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("moto_server exited: %v", err)
		case <-ctx.Done():
			t.Fatalf("moto_server did not answer on %s", url)
		case <-tick.C:
		}
	}
}

// motoLogs is a CloudWatch Logs client of moto's, which the test writes
// SNS's delivery records with, as SNS would.
func motoLogs(url string) *cloudwatchlogs.Client {
	return cloudwatchlogs.New(cloudwatchlogs.Options{Region: "eu-central-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("AKIAHERALDTEST000001", "secret", "")})
}

// TestSMSLogs_Moto sends SMS through SNS and reads their delivery status
// from CloudWatch Logs, both moto's, with the real adapters: the records
// SNS's format, written with PutLogEvents to the groups SNS writes to.
func TestSMSLogs_Moto(t *testing.T) {
	t.Parallel()
	url := startMoto(t)
	b := setupSMSLogs(t)
	// moto takes log events from the last 14 days only: the test's clock
	// starts now.
	b.clock.mu.Lock()
	b.clock.now = time.Now().UTC().Truncate(time.Millisecond)
	b.clock.mu.Unlock()
	tn := b.tenant(t, "logs-moto")
	acct, _ := b.useAWS(t, tn, app.SMS)
	b.svc.Providers["sns"].(*sns.Provider).Endpoint = url
	b.svc.SMSLogs.Log.(*sns.DeliveryLogs).Endpoint = url

	delivered, failed := b.sent(t, tn, "evt-moto-1"), b.sent(t, tn, "evt-moto-2")
	require.NotEqual(t, *delivered.ExternalMessageID, *failed.ExternalMessageID, "moto's SNS gave each publish its id")

	logs := motoLogs(url)
	ctx := b.ctx
	prefix := "sns/eu-central-1/" + motoAccount + "/"
	now := b.clock.Now()
	streams := 0
	put := func(group, id, status, response string, at time.Time) {
		t.Helper()
		streams++
		_, err := logs.CreateLogGroup(ctx, &cloudwatchlogs.CreateLogGroupInput{LogGroupName: aws.String(group)})
		var exists *types.ResourceAlreadyExistsException
		if err != nil {
			require.ErrorAs(t, err, &exists)
		}
		stream := fmt.Sprintf("stream-%d", streams)
		_, err = logs.CreateLogStream(ctx, &cloudwatchlogs.CreateLogStreamInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream)})
		require.NoError(t, err)
		rec := fmt.Sprintf(`{"notification":{"messageId":%q,"timestamp":%q},"delivery":{"phoneCarrier":"Telekom","mnc":1,`+
			`"destination":"+4915112345678","priceInUSD":0.07,"smsType":"Transactional","mcc":262,"providerResponse":%q,`+
			`"dwellTimeMs":599,"dwellTimeMsUntilDeviceAck":1344},"status":%q}`, id, at.Format("2006-01-02 15:04:05.000"), response, status)
		out, err := logs.PutLogEvents(ctx, &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream),
			LogEvents: []types.InputLogEvent{{Message: aws.String(rec), Timestamp: aws.Int64(at.UnixMilli())}}})
		require.NoError(t, err)
		require.Nil(t, out.RejectedLogEventsInfo, "moto took the event")
	}
	put(prefix+sns.LogGroupSuccess, *delivered.ExternalMessageID, "SUCCESS", "Message has been accepted by phone carrier", now.Add(-20*time.Second))
	put(prefix+sns.LogGroupFailure, *failed.ExternalMessageID, "FAILURE", "Phone is currently unreachable/unavailable", now.Add(-10*time.Second))
	// The same record twice (SNS's logging retried).
	put(prefix+sns.LogGroupSuccess, *delivered.ExternalMessageID, "SUCCESS", "Message has been accepted by phone carrier", now.Add(-20*time.Second))

	res := b.read(t, acct)
	require.Equal(t, 3, res.Events)
	require.Equal(t, 2, res.Receipts)
	require.Equal(t, app.MessageDelivered, b.message(t, tn.ID, delivered.ID).Status)
	got := b.message(t, tn.ID, failed.ID)
	require.Equal(t, app.MessageFailed, got.Status)
	require.Equal(t, "sns_sms_failure", *got.FailedReason)

	st := b.state(t, acct)
	require.Len(t, st.Cursors, 2)
	require.Empty(t, st.Run.LastError)

	// The next run re-reads the overlap and changes nothing.
	b.clock.Advance(time.Minute)
	res = b.read(t, acct)
	require.Equal(t, 3, res.Events)
	require.Zero(t, res.Receipts)
	require.Equal(t, 1, b.receiptEntries(t, delivered))
	require.Equal(t, 1, b.receiptEntries(t, failed))
}
