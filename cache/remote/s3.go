package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/sync/errgroup"
)

// Credential variables of the S3 tier, read from the daemon's own
// environment (Config.Getenv) when it opens the tier, again after a
// refusal (403) and when the credentials file changes. They are secret:
// no key, log, status or error ever holds their values.
const (
	AccessKeyVariable       = "AWS_ACCESS_KEY_ID"
	SecretKeyVariable       = "AWS_SECRET_ACCESS_KEY"
	SessionTokenVariable    = "AWS_SESSION_TOKEN"
	ProfileVariable         = "AWS_PROFILE"
	CredentialsFileVariable = "AWS_SHARED_CREDENTIALS_FILE"
)

// CredentialVariables are the variables the S3 tier's credentials come
// from.
var CredentialVariables = []string{AccessKeyVariable, SecretKeyVariable, SessionTokenVariable, ProfileVariable, CredentialsFileVariable}

// s3Parallel bounds the concurrent requests of one operation.
const s3Parallel = 8

// s3Backend is a backend on an S3 bucket: each value is one object,
// written by one PUT, under the target's prefix.
type s3Backend struct {
	client *minio.Client
	bucket string
	prefix string
	creds  *credentials.Credentials
	tr     *http.Transport
}

// envFileCredentials is the standard credential chain of the S3 tier:
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN),
// else the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, else
// ~/.aws/credentials) at profile AWS_PROFILE (else "default"). It is read
// again when the file's modification time changes or after Expire.
type envFileCredentials struct {
	getenv func(string) string

	mu       sync.Mutex
	file     string
	modTime  time.Time
	fromFile bool
}

func (p *envFileCredentials) Retrieve() (credentials.Value, error) {
	return p.RetrieveWithCredContext(nil)
}

func (p *envFileCredentials) RetrieveWithCredContext(*credentials.CredContext) (credentials.Value, error) {
	id, secret := p.getenv(AccessKeyVariable), p.getenv(SecretKeyVariable)
	if id != "" && secret != "" {
		p.mu.Lock()
		p.fromFile = false
		p.mu.Unlock()
		return credentials.Value{AccessKeyID: id, SecretAccessKey: secret, SessionToken: p.getenv(SessionTokenVariable), SignerType: credentials.SignatureV4}, nil
	}
	file := p.getenv(CredentialsFileVariable)
	if file == "" {
		home := p.getenv("HOME")
		if home == "" {
			return credentials.Value{SignerType: credentials.SignatureAnonymous}, nil
		}
		file = filepath.Join(home, ".aws", "credentials")
	}
	profile := p.getenv(ProfileVariable)
	if profile == "" {
		profile = "default"
	}
	fi, err := os.Stat(file)
	if err != nil {
		// No credentials at all: anonymous requests (a public bucket).
		return credentials.Value{SignerType: credentials.SignatureAnonymous}, nil
	}
	fc := &credentials.FileAWSCredentials{Filename: file, Profile: profile}
	v, err := fc.RetrieveWithCredContext(nil)
	if err != nil {
		return credentials.Value{}, fmt.Errorf("credentials file %s, profile %s: %w", file, profile, err)
	}
	p.mu.Lock()
	p.file, p.modTime, p.fromFile = file, fi.ModTime(), true
	p.mu.Unlock()
	v.SignerType = credentials.SignatureV4
	return v, nil
}

// IsExpired is true when the credentials came from the file and the file
// changed since.
func (p *envFileCredentials) IsExpired() bool {
	p.mu.Lock()
	file, mt, fromFile := p.file, p.modTime, p.fromFile
	p.mu.Unlock()
	if !fromFile {
		return false
	}
	fi, err := os.Stat(file)
	return err != nil || !fi.ModTime().Equal(mt)
}

func newS3Backend(t *S3Target, cfg *Config) (*s3Backend, error) {
	creds := credentials.New(&envFileCredentials{getenv: cfg.Getenv})
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		MaxIdleConnsPerHost:   s3Parallel * 2,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   cfg.ConnectTimeout,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	lookup := minio.BucketLookupAuto
	switch t.Style {
	case "path":
		lookup = minio.BucketLookupPath
	case "virtual":
		lookup = minio.BucketLookupDNS
	}
	c, err := minio.New(t.Endpoint, &minio.Options{
		Creds: creds, Secure: t.Secure, Transport: tr, Region: t.Region,
		BucketLookup: lookup, MaxRetries: 1,
	})
	if err != nil {
		return nil, &URLError{fmt.Sprintf("s3 endpoint: %v", err)}
	}
	return &s3Backend{client: c, bucket: t.Bucket, prefix: t.Prefix, creds: creds, tr: tr}, nil
}

func (b *s3Backend) object(key string) string {
	if b.prefix == "" {
		return key
	}
	return b.prefix + "/" + key
}

// missing reports whether err is an absent object.
func missing(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusNotFound || r.Code == minio.NoSuchKey
}

// maxObjectBytes bounds one object read: a chunk, a whole blob of at most
// a chunk, or an entry.
const maxObjectBytes = maxChunkBytes + 1

func (b *s3Backend) get(ctx context.Context, keys []string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s3Parallel)
	for i, k := range keys {
		g.Go(func() error {
			obj, err := b.client.GetObject(gctx, b.bucket, b.object(k), minio.GetObjectOptions{})
			if err != nil {
				if missing(err) {
					return nil
				}
				return err
			}
			defer obj.Close()
			// An object longer than the bound reads as one byte more
			// than it: longer than any value stored, so the size and
			// digest checks refuse it.
			v, err := io.ReadAll(io.LimitReader(obj, maxObjectBytes+1))
			if err != nil {
				if missing(err) {
					return nil
				}
				return err
			}
			out[i] = v
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func (b *s3Backend) set(ctx context.Context, keys []string, vals [][]byte) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s3Parallel)
	for i, k := range keys {
		g.Go(func() error {
			v := vals[i]
			_, err := b.client.PutObject(gctx, b.bucket, b.object(k), bytes.NewReader(v), int64(len(v)),
				minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: true})
			return err
		})
	}
	return g.Wait()
}

func (b *s3Backend) exists(ctx context.Context, keys []string) ([]bool, error) {
	out := make([]bool, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s3Parallel)
	for i, k := range keys {
		g.Go(func() error {
			_, err := b.client.StatObject(gctx, b.bucket, b.object(k), minio.StatObjectOptions{})
			switch {
			case err == nil:
				out[i] = true
			case missing(err):
			default:
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func (b *s3Backend) del(ctx context.Context, keys []string) {
	for _, k := range keys {
		_ = b.client.RemoveObject(ctx, b.bucket, b.object(k), minio.RemoveObjectOptions{})
	}
}

// kind classifies by the S3 error's HTTP status and code. A refusal
// expires the credentials, so that the next operation reads them again.
func (b *s3Backend) kind(err error) failureKind {
	var r minio.ErrorResponse
	if !errors.As(err, &r) {
		return failNetwork
	}
	switch {
	case r.StatusCode == http.StatusForbidden, r.Code == "AccessDenied", r.Code == "InvalidAccessKeyId", r.Code == "SignatureDoesNotMatch":
		b.creds.Expire()
		return failAuth
	case r.StatusCode == http.StatusInsufficientStorage:
		return failFull
	}
	return failNetwork
}

func (b *s3Backend) authHint() string {
	return "check " + AccessKeyVariable + " and " + SecretKeyVariable + " in the daemon's environment, or the shared credentials file"
}

func (b *s3Backend) close() error {
	b.tr.CloseIdleConnections()
	return nil
}
