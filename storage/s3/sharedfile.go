package s3

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// maxSharedFile bounds the shared credentials file read.
const maxSharedFile = 1 << 20

// sharedFile gives the static keys of profile AWS_PROFILE ("default")
// in AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials. Nil and no error
// means no file or no default profile: the chain goes on. A profile named
// by AWS_PROFILE must be there with keys, as the other kinds of profile
// (role_arn, credential_process, SSO; ~/.aws/config) are not read.
func sharedFile() (aws.CredentialsProvider, error) {
	path := os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, nil
		}
		path = filepath.Join(home, ".aws", "credentials")
	}
	profile := os.Getenv("AWS_PROFILE")
	asked := profile != ""
	if !asked {
		profile = "default"
	}
	keys, err := readProfile(path, profile)
	switch {
	case !asked && (errors.Is(err, fs.ErrNotExist) || err == nil && keys == nil):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("s3: profile %q: shared credentials file: %w: %w", profile, ErrConfig, err)
	case keys == nil:
		return nil, fmt.Errorf("s3: profile %q (AWS_PROFILE) is not in %s; only static keys of that file are read: %w",
			profile, path, ErrConfig)
	}
	return staticKeys(keys["aws_access_key_id"], keys["aws_secret_access_key"], keys["aws_session_token"],
		fmt.Sprintf("profile %q of %s (only aws_access_key_id, aws_secret_access_key and aws_session_token are read)", profile, path))
}

// readProfile reads the keys of profile in the ini file at path: nil when
// the file has no such section.
func readProfile(path, profile string) (map[string]string, error) {
	f, err := os.Open(path) //nolint:gosec // G703: the operator's credentials file
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var keys map[string]string
	in := false
	sc := bufio.NewScanner(io.LimitReader(f, maxSharedFile))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			in = strings.TrimSpace(line[1:len(line)-1]) == profile
			if in && keys == nil {
				keys = map[string]string{}
			}
		case in:
			if k, v, ok := strings.Cut(line, "="); ok {
				keys[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return keys, nil
}
