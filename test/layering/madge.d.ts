// The part of madge's API the folder-order test uses (madge ships no types).
declare module 'madge' {
  interface MadgeResult {
    /** File → the files it imports, paths relative to the base directory. */
    obj(): Record<string, string[]>;
  }
  interface MadgeConfig {
    fileExtensions?: string[];
    tsConfig?: string;
    excludeRegExp?: RegExp[];
  }
  export default function madge(path: string, config?: MadgeConfig): Promise<MadgeResult>;
}
