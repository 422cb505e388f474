package s3

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/test/servers"
)

// writeFile writes content to a new file in a test directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The first source whose variables are set wins, whatever the later ones
// hold: each case sets its source and every one after it.
func TestCredentialChainOrder(t *testing.T) {
	sources := []struct {
		want string
		key  string // the access key a static source gives
		set  func(t *testing.T, cfg *Config)
	}{
		{sourceSettings, "settings-key", func(t *testing.T, cfg *Config) {
			cfg.AccessKeyID, cfg.SecretAccessKey = "settings-key", "settings-secret"
		}},
		{sourceEnv, "env-key", func(t *testing.T, cfg *Config) {
			t.Setenv("AWS_ACCESS_KEY_ID", "env-key")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
		}},
		{sourceWebIdentity, "", func(t *testing.T, cfg *Config) {
			t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", writeFile(t, "token", "jwt"))
			t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::000000000000:role/sync")
		}},
		{sourceFile, "file-key", func(t *testing.T, cfg *Config) {
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", writeFile(t, "credentials",
				"[other]\naws_access_key_id = other-key\n\n# keys\n[default]\naws_access_key_id = file-key\naws_secret_access_key=file-secret\n"))
		}},
		{sourceContainer, "", func(t *testing.T, cfg *Config) {
			t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/creds")
		}},
		{sourceInstance, "", func(t *testing.T, cfg *Config) {}},
	}
	for i, s := range sources {
		t.Run(s.want, func(t *testing.T) {
			isolateSDKEnv(t)
			t.Setenv("AWS_EC2_METADATA_DISABLED", "")
			var cfg Config
			for _, later := range sources[i:] {
				later.set(t, &cfg)
			}
			got, p, err := credentialChain(cfg, "us-east-1", http.DefaultClient)
			if err != nil || got != s.want {
				t.Fatalf("credentialChain = %q, %v; want %q", got, err, s.want)
			}
			if s.key == "" {
				return
			}
			creds, err := p.Retrieve(context.Background())
			if err != nil || creds.AccessKeyID != s.key {
				t.Fatalf("Retrieve = %q, %v; want %q", creds.AccessKeyID, err, s.key)
			}
		})
	}
}

// First-hour mistakes are refused when the store is opened, naming the
// variable, rather than falling through to another source.
func TestCredentialChainRefusesHalfSetSources(t *testing.T) {
	cases := []struct {
		name string
		set  func(t *testing.T, cfg *Config)
		want error
		msg  string
	}{
		{"settings key without secret", func(t *testing.T, cfg *Config) { cfg.AccessKeyID = "k" }, ErrConfig, "settings"},
		{"env secret without key", func(t *testing.T, cfg *Config) { t.Setenv("AWS_SECRET_ACCESS_KEY", "s") }, ErrConfig, "AWS_ACCESS_KEY_ID"},
		{"token file without role", func(t *testing.T, cfg *Config) {
			t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", writeFile(t, "token", "jwt"))
		}, ErrConfig, "AWS_ROLE_ARN"},
		{"profile not in the file", func(t *testing.T, cfg *Config) { t.Setenv("AWS_PROFILE", "sso-dev") }, ErrConfig, `"sso-dev"`},
		{"profile without static keys", func(t *testing.T, cfg *Config) {
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", writeFile(t, "credentials", "[default]\nrole_arn = arn:aws:iam::0:role/x\n"))
		}, ErrConfig, "only aws_access_key_id"},
		{"container endpoint over plain http elsewhere", func(t *testing.T, cfg *Config) {
			t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://agent.example.test/creds")
		}, ErrConfig, "loopback"},
		{"nothing at all", func(t *testing.T, cfg *Config) {}, ErrBadCredentials, "AWS_EC2_METADATA_DISABLED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			isolateSDKEnv(t)
			var cfg Config
			tc.set(t, &cfg)
			_, _, err := credentialChain(cfg, "us-east-1", http.DefaultClient)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("credentialChain: %v, want %v mentioning %s", err, tc.want, tc.msg)
			}
		})
	}
}

// containerAgent answers as the ECS / EKS Pod Identity agent does, to
// requests bearing token.
func containerAgent(t *testing.T, token string, answer func(w http.ResponseWriter)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != token {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"code":"Unauthorized","message":"wrong authorization token"}`)
			return
		}
		answer(w)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func containerJSON(key, secret, token string, exp time.Time) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		fmt.Fprintf(w, `{"AccessKeyId":%q,"SecretAccessKey":%q,"Token":%q,"Expiration":%q}`,
			key, secret, token, exp.UTC().Format(time.RFC3339))
	}
}

// fakeSTS answers AssumeRoleWithWebIdentity for role and token only, and
// only when the call names itself (RoleSessionName), as STS requires.
func fakeSTS(t *testing.T, role, token string, answer func(w http.ResponseWriter)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.PostFormValue("Action") != "AssumeRoleWithWebIdentity" || r.PostFormValue("RoleArn") != role ||
			r.PostFormValue("WebIdentityToken") != token || r.PostFormValue("RoleSessionName") == "" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>`+
				`<Message>token not accepted</Message></Error></ErrorResponse>`)
			return
		}
		answer(w)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func stsXML(key, secret, token string, exp time.Time) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">`+
			`<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>%s</AccessKeyId>`+
			`<SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken><Expiration>%s</Expiration>`+
			`</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`,
			key, secret, token, exp.UTC().Format(time.RFC3339))
	}
}

const testRole = "arn:aws:iam::000000000000:role/catalogsync"

// useContainerAgent points the chain at srv, with the token in a file.
func useContainerAgent(t *testing.T, srv *httptest.Server, token string) {
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", srv.URL+"/v1/credentials")
	t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", writeFile(t, "agent-token", token+"\n"))
}

// useWebIdentity points the chain at srv as IRSA sets a pod up.
func useWebIdentity(t *testing.T, srv *httptest.Server, token string) {
	t.Setenv("AWS_ENDPOINT_URL_STS", srv.URL)
	t.Setenv("AWS_ROLE_ARN", testRole)
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", writeFile(t, "token", token))
}

// Temporary credentials of MinIO's STS, handed out by a container agent
// and by an STS answering AssumeRoleWithWebIdentity (MinIO's own needs an
// OpenID provider set up at its start), open a real bucket.
func TestCredentialSourcesOpenMinIO(t *testing.T) {
	m := servers.SharedMinIO(t)
	bucket := newBucket(t, m)
	key, secret, stsToken := sessionCredentials(t, m, bucket, "s3:*")
	exp := time.Now().Add(time.Hour)
	cases := []struct {
		name string
		use  func(t *testing.T)
	}{
		{"container agent", func(t *testing.T) {
			useContainerAgent(t, containerAgent(t, "agent-token", containerJSON(key, secret, stsToken, exp)), "agent-token")
		}},
		{"web identity", func(t *testing.T) {
			useWebIdentity(t, fakeSTS(t, testRole, "pod-jwt", stsXML(key, secret, stsToken, exp)), "pod-jwt")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			isolateSDKEnv(t)
			tc.use(t)
			cfg := minioConfig(m, bucket)
			cfg.AccessKeyID, cfg.SecretAccessKey = "", ""
			s := newTestStore(t, cfg)
			if _, err := s.Put(testCtx(t), "via-"+strings.ReplaceAll(tc.name, " ", "-"), strings.NewReader("x")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// hugeBody writes 16 MiB that start like credentials and never end them.
func hugeBody(prefix string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		fmt.Fprint(w, prefix)
		chunk := []byte(strings.Repeat("a", 64<<10))
		for range 256 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
}

// A credential endpoint answering garbage, without end, or credentials
// already expired fails New with ErrBadCredentials, naming the source and
// the fault, and the error text carries neither the secret it was sent
// nor the authorization token.
func TestHostileCredentialEndpoints(t *testing.T) {
	m := servers.SharedMinIO(t)
	bucket := newBucket(t, m)
	const secret, token = "hostile-secret-value", "agent-token-value"
	past := time.Now().Add(-time.Hour)
	agent := func(answer func(http.ResponseWriter)) func(t *testing.T) {
		return func(t *testing.T) { useContainerAgent(t, containerAgent(t, token, answer), token) }
	}
	sts := func(answer func(http.ResponseWriter)) func(t *testing.T) {
		return func(t *testing.T) { useWebIdentity(t, fakeSTS(t, testRole, token, answer), token) }
	}
	garbage := func(w http.ResponseWriter) { fmt.Fprintf(w, "<<%s not json nor xml", secret) }
	cases := []struct {
		name string
		use  func(t *testing.T)
		msg  string
	}{
		{"agent refuses the token", func(t *testing.T) {
			useContainerAgent(t, containerAgent(t, "another", containerJSON("k", secret, "", past)), token)
		}, "wrong authorization token"},
		{"agent answers garbage", agent(garbage), "container credentials endpoint"},
		{"agent answers without end", agent(hugeBody(`{"AccessKeyId":"`)), "larger than 64 KiB"},
		{"agent answers expired credentials", agent(containerJSON(m.AccessKey, secret, "", past)), "expired at"},
		{"STS refuses the token", func(t *testing.T) {
			useWebIdentity(t, fakeSTS(t, testRole, "another", stsXML("k", secret, "", past)), token)
		}, "InvalidIdentityToken"},
		{"STS answers garbage", sts(garbage), "not STS's XML"},
		{"STS answers without end", sts(hugeBody("<AssumeRoleWithWebIdentityResponse>")), "larger than 64 KiB"},
		{"STS answers expired credentials", sts(stsXML(m.AccessKey, secret, "", past)), "expired at"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			isolateSDKEnv(t)
			tc.use(t)
			cfg := minioConfig(m, bucket)
			cfg.AccessKeyID, cfg.SecretAccessKey, cfg.MaxAttempts = "", "", 1
			_, err := New(testCtx(t), cfg)
			if !errors.Is(err, ErrBadCredentials) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("New = %v, want ErrBadCredentials mentioning %q", err, tc.msg)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), token) {
				t.Fatalf("the error shows a secret: %v", err)
			}
		})
	}
}
