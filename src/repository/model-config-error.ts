/**
 * The one error type for a model configuration that cannot be used: a syntax
 * error in config.pbtxt, an invalid value, a disagreement between the config
 * and the ONNX model, or a model file that cannot be one (0 bytes). It carries where (file and, when known, line and
 * column) and why, so the repository can report it on the model's index entry
 * and in the load failure without reparsing the message.
 */
export class ModelConfigError extends Error {
  override readonly name = 'ModelConfigError';

  /**
   * @param file   the config file (or model directory, for auto-completed configs)
   * @param line   1-based line in `file`; undefined when the problem has no single line
   * @param reason what is wrong, naming the field, the expected and the actual value
   * @param column 1-based column on `line`, when known
   */
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    readonly reason: string,
    readonly column?: number,
  ) {
    const where = line === undefined ? '' : column === undefined ? `:${line}` : `:${line}:${column}`;
    super(`${file}${where}: ${reason}`);
  }
}
