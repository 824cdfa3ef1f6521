/** What a route's `key` function and a budget's `cost` function see of a request; reading it never consumes the body. */
export interface KeyRequest {
  method: string;
  /** Path and query, as sent. */
  path: string;
  headers: Readonly<Record<string, string | string[]>>;
  /** The body as text when it is in memory (string, bytes, buffered stream), else undefined. */
  text(): string | undefined;
}
