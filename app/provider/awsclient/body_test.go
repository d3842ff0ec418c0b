package awsclient

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCodeInBody(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, body, code, msg string
	}{
		{"QueryProtocol", `<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type><Code>InvalidParameter</Code><Message>Invalid parameter: PhoneNumber</Message></Error><RequestId>1</RequestId></ErrorResponse>`,
			"InvalidParameter", "Invalid parameter: PhoneNumber"},
		{"MotoErrors", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n  <ErrorResponse>\n    <Errors>\n      <Error>\n        <Code>InvalidClientTokenId</Code>\n        <Message><![CDATA[The security token included in the request is invalid.]]></Message>\n      </Error>\n    </Errors>\n  <RequestId>7a62c49f</RequestId>\n</ErrorResponse>",
			"InvalidClientTokenId", "The security token included in the request is invalid."},
		{"BareError", `<Error><Code>SignatureDoesNotMatch</Code><Message>no match</Message></Error>`, "SignatureDoesNotMatch", "no match"},
		{"EC2Style", `<Response><Errors><Error><Code>AuthFailure</Code><Message>AWS was not able to validate the provided access credentials</Message></Error></Errors><RequestID>1</RequestID></Response>`,
			"AuthFailure", "AWS was not able to validate the provided access credentials"},
		{"JSONType", `{"__type":"com.amazonaws.sesv2#BadRequestException","message":"Illegal address"}`, "BadRequestException", "Illegal address"},
		{"JSONTypeWithURL", `{"__type":"TooManyRequestsException:http://internal.amazon.com/","Message":"Maximum sending rate exceeded."}`, "TooManyRequestsException", "Maximum sending rate exceeded."},
		{"JSONWithoutCode", `{"message":"Missing final '@domain'"}`, "", "Missing final '@domain'"},
		{"JSONNumericCode", `{"code":400,"message":"bad"}`, "", "bad"},
		{"HTMLPage", `<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>`, "", ""},
		{"HTMLPageSayingError", `<html><body><h1>Error</h1><div class="Error"><p>Code</p></div></body></html>`, "", ""},
		{"CodeNotAnIdentifier", `<Error><Code>not a code</Code></Error>`, "", ""},
		{"PlainText", "Bad Request", "", ""},
		{"Empty", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, msg := codeInBody([]byte(tt.body))
			require.Equal(t, tt.code, code)
			require.Equal(t, tt.msg, msg)
		})
	}
}

func TestCheckEndpoint(t *testing.T) {
	t.Parallel()

	good := []struct {
		raw     string
		anyHost bool
	}{
		{"https://vpce-0a1b2c3d4e5f67890-k2l3m4n5.email.eu-central-1.vpce.amazonaws.com", false},
		{"https://email-fips.us-east-1.amazonaws.com", false},
		{"https://sns.cn-north-1.amazonaws.com.cn", false},
		{"https://email.eu-central-1.api.aws:443/", false},
		{"http://localhost:8005", true},
		{"http://127.0.0.1:4566/proxy", true},
	}
	for _, tt := range good {
		t.Run("Good/"+tt.raw, func(t *testing.T) {
			t.Parallel()
			_, err := CheckEndpoint(tt.raw, tt.anyHost)
			require.NoError(t, err)
		})
	}

	bad := []struct {
		raw     string
		anyHost bool
	}{
		{"http://localhost:8005", false},
		{"https://10.0.0.12", false},
		{"https://amazonaws.com.attacker.example", false},
		{"https://notamazonaws.com", false},
		{"https://email.eu-central-1.amazonaws.com:8443", false},
		{"ftp://email.eu-central-1.amazonaws.com", true},
		{"https://key:secret@email.eu-central-1.amazonaws.com", true},
		{"https://email.eu-central-1.amazonaws.com/#frag", true},
		{"https://email.eu-central-1.amazonaws.com/?", true},
		{"email.eu-central-1.amazonaws.com", true},
		{"/v2/email", true},
	}
	for _, tt := range bad {
		t.Run("Bad/"+tt.raw, func(t *testing.T) {
			t.Parallel()
			_, err := CheckEndpoint(tt.raw, tt.anyHost)
			require.Error(t, err)
		})
	}
}
