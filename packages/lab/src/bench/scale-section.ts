import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const OPEN = '<!-- scale -->';
const CLOSE = '<!-- /scale -->';

/** The scale section of a BENCHMARKS.md (kept when `tailcut-lab bench` rewrites the file). */
export function scaleSection(file: string): string {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const from = text.indexOf(OPEN);
  const to = text.indexOf(CLOSE);
  if (from < 0 || to < from) {
    return `${OPEN}\n## Scale\n\nFilled by \`tailcut-lab sketch\`, \`streams\` and \`soak\`: each writes its own part, and\n\`tailcut-lab bench\` keeps them when it rewrites the file.\n${CLOSE}`;
  }
  return text.slice(from, to + CLOSE.length);
}

/**
 * Writes `markdown` as the part `name` (sketch, streams, soak) of the scale section of `file`,
 * replacing the previous one and leaving the rest of the file as it was.
 */
export function writeScalePart(file: string, name: string, markdown: string): void {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '# tailcut benchmarks\n';
  let section = scaleSection(file);
  const open = `<!-- scale:${name} -->`;
  const close = `<!-- /scale:${name} -->`;
  const part = `${open}\n${markdown.trim()}\n${close}`;
  const from = section.indexOf(open);
  const to = section.indexOf(close);
  section =
    from >= 0 && to > from
      ? section.slice(0, from) + part + section.slice(to + close.length)
      : section.replace(CLOSE, `${part}\n${CLOSE}`);
  const start = text.indexOf(OPEN);
  const end = text.indexOf(CLOSE);
  const next =
    start >= 0 && end > start
      ? text.slice(0, start) + section + text.slice(end + CLOSE.length)
      : `${text.trimEnd()}\n\n${section}\n`;
  writeFileSync(file, next);
}
