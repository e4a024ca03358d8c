/** Reading Prometheus text exposition in tests. */

/** Sums a metric's samples over scrapes, keeping lines whose labels include `labels`. */
export function sumMetric(texts: readonly string[], name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const text of texts) {
    for (const line of text.split('\n')) {
      if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
      if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) total += Number(line.split(' ').pop());
    }
  }
  return total;
}

/** One sample of a scrape: metric name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Parses Prometheus text exposition (what `/metrics` answers) into samples: comment lines are skipped, label
 * values unescaped (`\\`, `\"`, `\n`), `NaN`/`+Inf`/`-Inf` read as numbers. Timestamps are not used by the
 * replicas and are refused.
 * @throws Error naming the line that is not a sample.
 */
export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    out.push({ name: m[1]!, labels, value: Number(m[4]!.replace(/^\+?Inf$/, 'Infinity').replace(/^-Inf$/, '-Infinity')) });
  }
  return out;
}

/** The samples of one metric whose labels include `labels`. */
export function samplesOf(text: string, name: string, labels: Record<string, string> = {}): Sample[] {
  return parseExposition(text).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}
