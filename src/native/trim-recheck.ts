// When to ask the memory trimmer (memory-trimmer.ts) for one more trim, for
// memory freed after its last one.
//
// Why: the native policy (native/process/trim_policy.h) trims again only
// when RSS grows a step above what its last trim left. Memory freed *after*
// a trim does not make RSS grow: it stays resident, free inside malloc, until
// the next malloc_trim. A trim that ran while a burst was still in use (the
// HTTP bombs' inflate and parse buffers, a burst's Buffers awaiting their
// finalizers) thus left RSS at about twice its idle level for good, though one
// malloc_trim(0) then brought it back to idle (measured, issue 21).
//
// The rule: RSS's base is the lowest level it was seen at. Once no trim has
// run for `everyTicks` reports and RSS is more than `minGrowthBytes` above
// its base, one trim is requested. If that trim cannot bring RSS back within
// `minGrowthBytes` of the base, the memory is in use (a model loaded, a cache
// filled): its level becomes the base, so a process that grew for good is
// not trimmed again and again. So it costs one malloc_trim on the trimmer's
// thread per step of growth, and none while RSS stays near its base.
//
// Pure state; main thread (the trimmer's report timer).

export interface TrimRecheckOptions {
  /** RSS above its base by more than this asks for a trim (the native policy's minGrowthBytes). */
  readonly minGrowthBytes: number;
  /** Reports without a trim before asking. */
  readonly everyTicks: number;
}

export class TrimRecheck {
  private baseRss = Number.POSITIVE_INFINITY;
  private trimsSeen = 0;
  private ticksSinceTrim = 0;
  /** A trim was requested here and has not been seen yet. */
  private requested = false;

  constructor(private readonly options: TrimRecheckOptions) {}

  /**
   * One report: RSS now, and the trimmer's trim count and the RSS its last
   * check left (after its last trim, if it trimmed then). Returns whether to
   * request a trim now.
   */
  observe(rssBytes: number, trims: number, rssAfterLastTrim: number): boolean {
    if (trims !== this.trimsSeen) {
      this.trimsSeen = trims;
      this.ticksSinceTrim = 0;
      // Ours could not give the memory back: it is in use, the new level is the base.
      if (this.requested && rssAfterLastTrim > this.baseRss + this.options.minGrowthBytes) this.baseRss = rssAfterLastTrim;
      this.requested = false;
    } else {
      this.ticksSinceTrim += 1;
    }
    this.baseRss = Math.min(this.baseRss, rssBytes);
    if (this.requested || this.ticksSinceTrim < this.options.everyTicks) return false;
    if (rssBytes <= this.baseRss + this.options.minGrowthBytes) return false;
    this.requested = true;
    return true;
  }
}
