import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname, parse, resolve } from 'node:path';

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

/**
 * Why a report cannot be written at `path` (its directory is missing, not a directory or not
 * writable), or undefined when it can: checked before a run, not after it.
 */
export function reportPathProblem(path: string): string | undefined {
  const dir = dirname(resolve(path));
  try {
    if (!statSync(dir).isDirectory()) return `--report ${path}: ${dir} is not a directory`;
    accessSync(dir, constants.W_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT'
      ? `--report ${path}: the directory ${dir} does not exist`
      : `--report ${path}: cannot write in ${dir} (${code})`;
  }
  return undefined;
}
