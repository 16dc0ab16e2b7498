import * as z from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const blankToUndefined = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);
const opt = <T extends z.ZodTypeAny>(s: T) => z.preprocess(blankToUndefined, s.optional());

/**
 * Every setting Fieldbase reads, by environment variable name. Parsed once at start by
 * `parseConfig`; nothing else reads the environment (lib/runtime does, through this).
 */
export const ConfigSchema = z.object({
  PORT: z.preprocess(blankToUndefined, z.coerce.number().int().min(0).max(65535).default(8383)),
  /** Address the local server binds; loopback by default so a fresh install is not exposed. */
  HOST: z.preprocess(blankToUndefined, z.string().default('127.0.0.1')),
  /** PostgreSQL connection string; unset means embedded PGlite under DATA_DIR/db. */
  DATABASE_URL: opt(z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')),
  DATABASE_POOL_MAX: z.preprocess(blankToUndefined, z.coerce.number().int().min(1).max(200).default(10)),
  /**
   * Seconds an idle PostgreSQL connection stays open; 0 keeps it until the process ends. Lambda
   * defaults to 20 (lib/runtime/lambda.ts) so a frozen instance does not hold a server connection.
   */
  DATABASE_IDLE_TIMEOUT: z.preprocess(blankToUndefined, z.coerce.number().min(0).max(86_400).default(0)),
  /**
   * Named prepared statements (postgres.js `prepare`). Set false behind a transaction-mode pooler
   * (RDS Proxy, PgBouncer, Supavisor): a statement prepared on one server connection is not there
   * on the next, and prepared statements pin RDS Proxy connections.
   */
  DATABASE_PREPARE: z.preprocess(blankToUndefined, bool.default(true)),
  DATA_DIR: z.preprocess(blankToUndefined, z.string().default('./data')),
  S3_BUCKET: opt(z.string()),
  S3_ENDPOINT: opt(z.string().url()),
  S3_REGION: z.preprocess(blankToUndefined, z.string().default('us-east-1')),
  S3_ACCESS_KEY_ID: opt(z.string()),
  S3_SECRET_ACCESS_KEY: opt(z.string()),
  S3_FORCE_PATH_STYLE: z.preprocess(blankToUndefined, bool.default(false)),
  /** bcrypt cost factor; 12 in production, tests lower it for speed. */
  BCRYPT_COST: z.preprocess(blankToUndefined, z.coerce.number().int().min(4).max(15).default(12)),
  /** Web user session lifetime in hours (Central: 24). */
  SESSION_LIFETIME_HOURS: z.preprocess(blankToUndefined, z.coerce.number().positive().max(24 * 365).default(24)),
  /**
   * Seconds a successful session lookup is remembered in memory (0: off). Revocations in the same
   * process apply at once; another instance may accept a revoked token for this long.
   */
  SESSION_CACHE_SECONDS: z.preprocess(blankToUndefined, z.coerce.number().min(0).max(60).default(2)),
  /**
   * Password guessing (lib/throttle): after this many failed checks for one email within
   * LOGIN_LOCK_MINUTES, further attempts for it answer 429 without checking until the lock ends.
   */
  LOGIN_MAX_FAILURES: z.preprocess(blankToUndefined, z.coerce.number().int().min(1).default(10)),
  /** The same for one client address, across all emails (a spray of guesses). */
  LOGIN_MAX_FAILURES_PER_ADDRESS: z.preprocess(blankToUndefined, z.coerce.number().int().min(1).default(100)),
  /** The counting window and the lock, in minutes. */
  LOGIN_LOCK_MINUTES: z.preprocess(blankToUndefined, z.coerce.number().positive().max(24 * 60).default(15)),
  ADMIN_EMAIL: opt(z.string().email()),
  ADMIN_PASSWORD: opt(z.string().min(10).max(72)),
  /**
   * Allow Basic and cookie authentication over plain HTTP. Central refuses them without HTTPS
   * (401.3); the local server turns this on by itself when it listens on loopback only.
   */
  ALLOW_HTTP_AUTH: opt(bool),
  /**
   * Trust `X-Forwarded-Proto: https` from the reverse proxy in front (nginx, a load balancer) as
   * proof of HTTPS for Basic and cookie authentication. Off by default: without a proxy that sets
   * (and strips) it, any client could send the header.
   */
  TRUST_PROXY: opt(bool),
  /**
   * The public origin clients reach the server at (https://forms.example.org), used in OpenRosa
   * form lists and manifests. Unset: the origin of each request.
   */
  PUBLIC_URL: opt(z.string().url().transform((u) => u.replace(/\/+$/, ''))),
  /** A built central-frontend folder the local server also serves (infra/local/ui.ts); unset: API only. */
  UI_DIR: opt(z.string().min(1)),
  /**
   * SMTP server for account mail (invitations, password resets, change notices). Unset: the local
   * server writes each message as an .eml file under DATA_DIR/mail and logs its path; Workers and
   * Lambda log a warning instead.
   */
  EMAIL_HOST: opt(z.string().min(1)),
  /** SMTP port; unset: 465 with EMAIL_SECURE, else 587. */
  EMAIL_PORT: opt(z.coerce.number().int().min(1).max(65535)),
  /** TLS from the first byte (port 465). Off: plain SMTP upgraded with STARTTLS when the server offers it. */
  EMAIL_SECURE: z.preprocess(blankToUndefined, bool.default(false)),
  /** SMTP login; set with EMAIL_PASSWORD, or neither for a relay that needs none. */
  EMAIL_USER: opt(z.string().min(1)),
  EMAIL_PASSWORD: opt(z.string().min(1)),
  /** Sender address (`Name <addr>` allowed); unset: no-reply@ the PUBLIC_URL host, else no-reply@localhost. */
  EMAIL_FROM: opt(z.string().min(3)),
  /**
   * An Enketo server's API root (Central's `enketo.url`, e.g. https://forms.example.org/-). Set with
   * ENKETO_API_KEY: forms then get their enketoId / enketoOnceId from Enketo on draft and publish,
   * as Central (lib/enketo). Unset: no Enketo; published forms get ids Fieldbase draws (Web Forms).
   */
  ENKETO_URL: opt(z.string().url().transform((u) => u.replace(/\/+$/, ''))),
  /** Enketo's API key (sent as the Basic user name, as Central does). */
  ENKETO_API_KEY: opt(z.string().min(1)),
  LOG_LEVEL: z.preprocess(blankToUndefined, z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info')),
  /** Largest binary upload (form definitions, attachments), bytes: OpenRosa's advertised 100 MB. */
  MAX_UPLOAD_BYTES: z.preprocess(blankToUndefined, z.coerce.number().int().positive().default(100_000_000)),
  /** Largest JSON body accepted, bytes (Central's body parser: 250 kB). */
  MAX_JSON_BYTES: z.preprocess(blankToUndefined, z.coerce.number().int().positive().default(250_000)),
  /**
   * X-OpenRosa-Accept-Content-Length, bytes: Collect splits a submission's media across POSTs of
   * at most this size. Unset: MAX_UPLOAD_BYTES. Lambda defaults to 4,400,000 (its 6 MB event cap
   * holds the body base64-encoded).
   */
  OPENROSA_MAX_BODY_BYTES: opt(z.coerce.number().int().positive()),
  /**
   * Largest response body sent in one piece, bytes; a larger attachment or export answers 307 to a
   * presigned S3 URL instead (needs S3 blobs). Unset: no cap (Node, Workers, streaming Lambda).
   * Lambda behind API Gateway defaults to 4,000,000 (its 6 MB response cap, base64).
   */
  RESPONSE_MAX_BYTES: opt(z.coerce.number().int().positive()),
  /** Seconds a presigned download URL stays valid. */
  PRESIGN_TTL_SECONDS: z.preprocess(blankToUndefined, z.coerce.number().int().min(1).max(43_200).default(300)),
  /**
   * OData `$filter` on a form field builds an index on that field (lib/odata/field-indexes.ts) once
   * the filtered form has at least this many submissions; 0: at the first filter; -1: never.
   */
  ODATA_FIELD_INDEX_MIN_ROWS: z.preprocess(blankToUndefined, z.coerce.number().int().min(-1).default(10_000)),
});

export type Config = z.infer<typeof ConfigSchema>;

/** Thrown by parseConfig: names each bad variable so start-up fails with a useful message. */
export class ConfigError extends Error {
  constructor(readonly issues: { variable: string; message: string }[]) {
    super(
      `Invalid configuration:\n${issues.map((i) => `  ${i.variable}: ${i.message}`).join('\n')}`,
    );
    this.name = 'ConfigError';
  }
}

/**
 * Parses settings from an environment-like record (process.env, a Workers env, a test object).
 * @returns the typed Config with defaults applied.
 * @throws ConfigError naming every invalid variable (start-up fails; never a Problem).
 * Also rejects a half-configured S3 store (S3_BUCKET without both credentials, or the reverse) and
 * half-configured SMTP (EMAIL_USER without EMAIL_PASSWORD, or SMTP settings without EMAIL_HOST),
 * and ENKETO_URL without ENKETO_API_KEY or the reverse.
 */
export function parseConfig(source: Record<string, unknown>): Config {
  const result = ConfigSchema.safeParse(source);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((i) => ({ variable: String(i.path[0] ?? '?'), message: i.message })),
    );
  }
  const c = result.data;
  const s3Creds = [c.S3_ACCESS_KEY_ID, c.S3_SECRET_ACCESS_KEY].filter((v) => v != null).length;
  if (s3Creds === 1) {
    throw new ConfigError([
      {
        variable: c.S3_ACCESS_KEY_ID == null ? 'S3_ACCESS_KEY_ID' : 'S3_SECRET_ACCESS_KEY',
        message: 'S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together',
      },
    ]);
  }
  if (c.S3_BUCKET == null && (c.S3_ENDPOINT != null || s3Creds > 0)) {
    throw new ConfigError([{ variable: 'S3_BUCKET', message: 'required when other S3_* settings are given' }]);
  }
  if ((c.ADMIN_EMAIL == null) !== (c.ADMIN_PASSWORD == null)) {
    throw new ConfigError([
      {
        variable: c.ADMIN_EMAIL == null ? 'ADMIN_EMAIL' : 'ADMIN_PASSWORD',
        message: 'ADMIN_EMAIL and ADMIN_PASSWORD must be set together',
      },
    ]);
  }
  if ((c.ENKETO_URL == null) !== (c.ENKETO_API_KEY == null)) {
    throw new ConfigError([
      {
        variable: c.ENKETO_URL == null ? 'ENKETO_URL' : 'ENKETO_API_KEY',
        message: 'ENKETO_URL and ENKETO_API_KEY must be set together',
      },
    ]);
  }
  if ((c.EMAIL_USER == null) !== (c.EMAIL_PASSWORD == null)) {
    throw new ConfigError([
      {
        variable: c.EMAIL_USER == null ? 'EMAIL_USER' : 'EMAIL_PASSWORD',
        message: 'EMAIL_USER and EMAIL_PASSWORD must be set together',
      },
    ]);
  }
  if (c.EMAIL_HOST == null && (c.EMAIL_PORT != null || c.EMAIL_USER != null)) {
    throw new ConfigError([{ variable: 'EMAIL_HOST', message: 'required when EMAIL_PORT or EMAIL_USER is given' }]);
  }
  return c;
}
