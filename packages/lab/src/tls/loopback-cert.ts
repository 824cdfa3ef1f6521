/**
 * A self-signed certificate for loopback servers (CN localhost; SAN localhost, 127.0.0.1, ::1;
 * valid from 2000 to 2126), so that the lab and the tests run hedging over TLS and HTTP/2
 * without generating anything (Node has no API to make a certificate). Made once with
 * `openssl ca -selfsign -startdate 20000101000000Z -enddate 21260101000000Z` over a P-256 key.
 *
 * A test key: it secures nothing, and must never serve anything but loopback. Clients trust
 * it with `connect: { ca: LOOPBACK_TLS.cert }` on their undici Agent.
 */
export const LOOPBACK_TLS = {
  cert: `-----BEGIN CERTIFICATE-----
MIIBeTCCAR+gAwIBAgIBATAKBggqhkjOPQQDAjAUMRIwEAYDVQQDDAlsb2NhbGhv
c3QwIBcNMDAwMTAxMDAwMDAwWhgPMjEyNjAxMDEwMDAwMDBaMBQxEjAQBgNVBAMM
CWxvY2FsaG9zdDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABDKJbIhXcPsxM8GH
hLWnqrR+7Ukf5ezqA0FZb9Vw6L/ZxJYp6xka5+5uW/vQ1q5N+D8cxkXmkZX+He8M
9cSqX9WjYDBeMCwGA1UdEQQlMCOCCWxvY2FsaG9zdIcEfwAAAYcQAAAAAAAAAAAA
AAAAAAAAATAPBgNVHRMBAf8EBTADAQH/MB0GA1UdDgQWBBTyMzUJhoh5oxj1pYqc
NzUv9eUldTAKBggqhkjOPQQDAgNIADBFAiBsXDILrKh13QMnDDbD8LjsSh2kufm/
l4ejQQQ4cGRfXQIhAIHd5fdv0Fd19XhnVzCME8qCjeGZU1W84IfKBLU2vI35
-----END CERTIFICATE-----
`,
  key: `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgy6PeyPIP7dPMGgnr
2C+1D1ve2wmvXrJTzKt5vhBN9UyhRANCAAQyiWyIV3D7MTPBh4S1p6q0fu1JH+Xs
6gNBWW/VcOi/2cSWKesZGufublv70NauTfg/HMZF5pGV/h3vDPXEql/V
-----END PRIVATE KEY-----
`,
} as const;
