package intercept

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // pure Go: nel-run stays a static binary
)

// CacheFile is the database a caching link keeps in its cache_dir.
const CacheFile = "nel_cache.db"

// caching is NeMo's caching interceptor: successful answers kept in an
// SQLite database under cache_dir, keyed by the request's canonical
// content and the sample it belongs to (benchmark, item, repeat, turn), so
// that a run of the same recipe with the same cache_dir replays every
// answer without calling the model and scores the same. With bypass the
// link neither reads nor writes. Shards running at once share the file:
// WAL lets readers and one writer work together, and the busy timeout
// makes a writer wait for another instead of failing.
type caching struct {
	db     *sql.DB
	bypass bool
}

func newCaching(raw []byte) (Interceptor, error) {
	var c struct {
		CacheDir *string `json:"cache_dir"`
		Bypass   bool    `json:"bypass"`
	}
	if err := decodeConfig(raw, &c); err != nil {
		return nil, err
	}
	if c.CacheDir == nil || *c.CacheDir == "" {
		return nil, errors.New("config.cache_dir is required")
	}
	if c.Bypass {
		return &caching{bypass: true}, nil
	}
	db, err := OpenCache(*c.CacheDir)
	if err != nil {
		return nil, err
	}
	return &caching{db: db}, nil
}

// OpenCache opens (creating) the cache database in dir.
func OpenCache(dir string) (*sql.DB, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cache_dir: %w", err)
	}
	path := filepath.Join(dir, CacheFile)
	// busy_timeout first: switching to WAL takes a lock that another
	// shard opening the same file at the same moment may hold.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	const schema = `CREATE TABLE IF NOT EXISTS cache_v1 (
		key TEXT PRIMARY KEY, status INTEGER NOT NULL, content_type TEXT NOT NULL,
		body BLOB NOT NULL, created_at TEXT NOT NULL)`
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

func (c *caching) Close() error {
	if c.db == nil {
		return nil
	}
	return c.db.Close()
}

func (c *caching) Wrap(next Handler) Handler {
	if c.bypass {
		return next
	}
	return func(ctx context.Context, req *Request) (*Response, error) {
		if req.Method != http.MethodPost {
			// Only generations are kept: a probe (GET /models) must
			// reach the endpoint, as NeMo's proxy takes only POSTs.
			return next(ctx, req)
		}
		key, err := CacheKey(req)
		if err != nil {
			return next(ctx, req)
		}
		var status int
		var ctype string
		var body []byte
		err = c.db.QueryRowContext(ctx, `SELECT status, content_type, body FROM cache_v1 WHERE key = ?`, key).
			Scan(&status, &ctype, &body)
		switch {
		case err == nil:
			h := http.Header{}
			h.Set("Content-Type", ctype)
			return &Response{Status: status, Header: h, Body: body, Cached: true}, nil
		case !errors.Is(err, sql.ErrNoRows):
			return nil, fmt.Errorf("cache: %w", err)
		}
		resp, err := next(ctx, req)
		if err != nil || resp == nil || !resp.OK() || decodeBody(resp.Body) == nil {
			return resp, err // only whole successful answers are kept
		}
		_, err = c.db.ExecContext(ctx, `INSERT OR REPLACE INTO cache_v1 (key, status, content_type, body, created_at) VALUES (?, ?, ?, ?, ?)`,
			key, resp.Status, "application/json", resp.Body, time.Now().UTC().Format(time.RFC3339Nano))
		if err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
		return resp, nil
	}
}

// CacheKey is the hex SHA-256 of the canonical JSON (keys sorted, numbers
// as written) of the request's path, body and sample: the same prompt in
// another item or repeat is another answer (a sampled model answers each
// repeat anew; the cache must replay each, not one for all).
func CacheKey(req *Request) (string, error) {
	b, err := encodeJSON(map[string]any{"path": req.Path, "body": req.bodyValue(), "sample": req.Sample})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
