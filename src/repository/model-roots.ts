/**
 * The model repository's roots: one directory or several
 * (`--model-repository` repeated), served as one repository, as Triton does.
 * A model is `<root>/<name>/`; a name found in two roots is an error for that
 * model (it fails to load, naming the roots), never a silent choice.
 * Reads the file system, keeps no state.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { echo } from '../common/echo.js';
import { scanRepository, withoutRepositoryPath } from './model-directory.js';

/**
 * A model name present in more than one root. The message names the roots by
 * their place on the command line, not their paths, so clients may see it.
 */
export class DuplicateModelError extends Error {
  constructor(
    readonly model: string,
    readonly dirs: readonly string[],
    positions: readonly number[],
  ) {
    super(
      `model ${echo(model)} is in ${dirs.length} model repositories (--model-repository number ${positions.join(' and ')}); ` +
        'expected each model name in one repository only',
    );
  }
}

export class ModelRoots {
  readonly dirs: readonly string[];

  constructor(dirs: string | readonly string[]) {
    this.dirs = typeof dirs === 'string' ? [dirs] : [...dirs];
    if (this.dirs.length === 0) throw new Error('ModelRoots: expected at least one repository directory');
  }

  /** Model directory names across every root, sorted, each once (a duplicate fails when it loads). Throws when a root cannot be read. */
  async scan(): Promise<string[]> {
    const names = new Set<string>();
    for (const dir of this.dirs) for (const name of await scanRepository(dir)) names.add(name);
    return [...names].sort();
  }

  /** Every root's directory for the model (a name that passed modelNameProblem), in root order. */
  dirsOf(name: string): string[] {
    return this.positionsOf(name).map((i) => path.join(this.dirs[i]!, name));
  }

  /** The model's one directory; undefined when no root has it. Throws DuplicateModelError when two do. */
  modelDir(name: string): string | undefined {
    const positions = this.positionsOf(name);
    const dirs = positions.map((i) => path.join(this.dirs[i]!, name));
    if (dirs.length > 1) throw new DuplicateModelError(name, dirs, positions.map((i) => i + 1));
    return dirs[0];
  }

  /** The indexes of the roots that have a directory `name`. */
  private positionsOf(name: string): number[] {
    const positions: number[] = [];
    this.dirs.forEach((root, i) => {
      try {
        if (statSync(path.join(root, name)).isDirectory()) positions.push(i);
      } catch {
        // not in this root
      }
    });
    return positions;
  }

  has(name: string): boolean {
    return this.dirsOf(name).length > 0;
  }

  /** `message` without any root's path, as a client may see it (see withoutRepositoryPath). */
  withoutPaths(message: string): string {
    return this.dirs.reduce((text, dir) => withoutRepositoryPath(text, dir), message);
  }
}
