// What a benchmark suite is, for bench/run.ts. A suite measures, returns a
// JSON-able report (its shape is fixed by the issue that adds the suite) and
// a few rows for the console table. Suites never assert on timings.

export interface SuiteContext {
  /** Shorter runs for smoke checks (CI); figures are noisier. */
  readonly quick: boolean;
  /** The package root (where CMakeLists.txt and package.json live). */
  readonly root: string;
  /** Progress lines go to stderr so stdout stays parseable. */
  readonly log: (line: string) => void;
  /** Where the runner will write the JSON; suites put other artefacts (.md, .svg) next to it. */
  readonly outputFile: string;
  /** `--threads 1,2,...` (suites whose `options` list it): ascending, distinct, 1 included. */
  readonly threads?: readonly number[];
  /** `--rounds N` (suites whose `options` list it). */
  readonly rounds?: number;
}

/** The runner's options that only some suites take; any other suite refuses them. */
export type SuiteOption = 'threads' | 'rounds';

export interface SuiteReport {
  /** Written to the JSON file as is; always has `suite`. */
  readonly json: { readonly suite: string } & Record<string, unknown>;
  /** [label, value] rows for the console. */
  readonly table: readonly (readonly [string, string])[];
}

export interface BenchSuite {
  readonly name: string;
  readonly description: string;
  /** The runner options this suite takes besides --quick and --json. */
  readonly options?: readonly SuiteOption[];
  run(context: SuiteContext): Promise<SuiteReport>;
}
