import type { ErrorKind } from './error-kinds.js';

/**
 * A failure that knows its kind and the message its client sees: ServingError
 * (serving-error.ts), and NativeError and its subclasses (src/native), which classify
 * themselves from their native status code or rejection reason. classifyError
 * takes both by `instanceof`, never by message text. It lives in common/ so
 * that native/ extends it without common/ importing native/ (the folder order).
 */
export abstract class ClassifiedError extends Error {
  abstract readonly kind: ErrorKind;
  /** What a client sees; `message` may say more, for logs (a native operation's name, say). */
  abstract readonly clientMessage: string;
}
