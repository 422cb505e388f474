package s3

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Environment variables read by ConfigFromEnv. Credentials are not among
// them: the SDK's default chain reads AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (and shared files, web
// identity, instance roles).
const (
	EnvEndpoint  = "CATALOGSYNC_S3_ENDPOINT"
	EnvBucket    = "CATALOGSYNC_S3_BUCKET"
	EnvRegion    = "CATALOGSYNC_S3_REGION"
	EnvPrefix    = "CATALOGSYNC_S3_PREFIX"
	EnvPathStyle = "CATALOGSYNC_S3_PATH_STYLE"
	EnvStall     = "CATALOGSYNC_S3_STALL_TIMEOUT"
)

// ConfigFromEnv reads the CATALOGSYNC_S3_* variables. A Config without
// Bucket means "no S3 store configured" (see Enabled).
func ConfigFromEnv() (Config, error) {
	c := Config{
		Endpoint: os.Getenv(EnvEndpoint),
		Bucket:   os.Getenv(EnvBucket),
		Region:   os.Getenv(EnvRegion),
		Prefix:   os.Getenv(EnvPrefix),
	}
	if v := os.Getenv(EnvPathStyle); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("s3: %s=%q is not a boolean: %w", EnvPathStyle, v, ErrConfig)
		}
		c.PathStyle = b
	}
	if v := os.Getenv(EnvStall); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return c, fmt.Errorf("s3: %s=%q is not a duration: %w", EnvStall, v, ErrConfig)
		}
		c.StallTimeout = d
	}
	return c, nil
}

// Enabled reports whether c selects an S3 store at all.
func (c Config) Enabled() bool { return c.Bucket != "" }

// RegisterFlags adds the --s3-* flags to fs, defaulting to c's current
// values (fill c with ConfigFromEnv first, so flags override the
// environment). Parsing fs then sets c's fields.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Bucket, "s3-bucket", c.Bucket, "S3 bucket to store catalogs in; selects the S3 store (env "+EnvBucket+")")
	fs.StringVar(&c.Endpoint, "s3-endpoint", c.Endpoint, "S3 endpoint URL for S3-compatible services, e.g. http://minio:9000 (env "+EnvEndpoint+")")
	fs.StringVar(&c.Region, "s3-region", c.Region, "S3 region (env "+EnvRegion+", else AWS_REGION; us-east-1 with --s3-endpoint)")
	fs.StringVar(&c.Prefix, "s3-prefix", c.Prefix, "key prefix inside the bucket, so deployments can share it (env "+EnvPrefix+")")
	fs.BoolVar(&c.PathStyle, "s3-path-style", c.PathStyle, "path-style bucket addressing, as MinIO needs (env "+EnvPathStyle+")")
	if c.StallTimeout == 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	fs.DurationVar(&c.StallTimeout, "s3-stall-timeout", c.StallTimeout, "how long the store may send nothing (no response, no byte of a body either way) before a request fails (env "+EnvStall+")")
}
