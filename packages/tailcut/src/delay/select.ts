/**
 * The value of rank `k` (0-based, ascending) among the first `n` values of `a`, in expected
 * linear time: quickselect with a median-of-three pivot and a three-way partition (so runs of
 * equal latencies cost nothing extra). Reorders `a[0..n)`.
 */
export function selectRank(a: Float64Array, n: number, k: number): number {
  let lo = 0;
  let hi = n - 1;
  while (hi > lo) {
    const x = a[lo] as number;
    const y = a[(lo + hi) >>> 1] as number;
    const z = a[hi] as number;
    // The median of the three.
    const pivot = Math.max(Math.min(x, y), Math.min(Math.max(x, y), z));
    // a[lo..lt) < pivot, a[lt..gt] = pivot, a(gt..hi] > pivot.
    let lt = lo;
    let gt = hi;
    let i = lo;
    while (i <= gt) {
      const v = a[i] as number;
      if (v < pivot) swap(a, lt++, i++);
      else if (v > pivot) swap(a, i, gt--);
      else i++;
    }
    if (k < lt) hi = lt - 1;
    else if (k > gt) lo = gt + 1;
    else return pivot;
  }
  return a[k] as number;
}

function swap(a: Float64Array, i: number, j: number): void {
  const t = a[i] as number;
  a[i] = a[j] as number;
  a[j] = t;
}
