import { existsSync } from 'node:fs';
import { parse, resolve } from 'node:path';

/**
 * Where to write a report without overwriting an earlier one: `path` itself when it is free or
 * `force` is set, else the first free `name-2.ext`, `name-3.ext`, ... beside it.
 */
export function freshReportPath(path: string, force: boolean): string {
  const wanted = resolve(path);
  if (force || !existsSync(wanted)) return wanted;
  const { dir, name, ext } = parse(wanted);
  for (let n = 2; ; n++) {
    const candidate = resolve(dir, `${name}-${n}${ext}`);
    if (!existsSync(candidate)) return candidate;
  }
}
