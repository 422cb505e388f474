package s3

// Enabled reports whether c selects an S3 store at all: a Config without
// Bucket means "no S3 store configured". The command fills Config from its
// flags and environment; this package reads only the AWS variables of the
// region, the CA bundle and the credential chain (awsConfig).
func (c Config) Enabled() bool { return c.Bucket != "" }
