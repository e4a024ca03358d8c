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
