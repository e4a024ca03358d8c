/**
 * Number literals that parsing into a JavaScript number (an IEEE 754 double) would change silently, for the
 * loader's YAML step (yaml-position.ts) and the API's JSON bodies (runner/api/json-body.ts): one rule for every
 * door. A double holds every integer up to ±(2^53−1) (`Number.MAX_SAFE_INTEGER`); past it, a literal is refused
 * when the number stored would read back with other digits than were written:
 * - an integer literal (`12345678901234567890`, YAML's `0x…`/`0o…`): any outside ±(2^53−1) (its digits are the point);
 * - a decimal or exponent literal (`12345678901234567890.0`, `1.2345678901234567890e19`): when its significant
 *   digits differ from those of the double it becomes (`12345678901234567000`); `1e20` or `6.02e23` read back as
 *   written and are kept, as floats are.
 * And a literal nearer to 0 than a double can be (`1e-400`), which would read as 0.
 * Non-finite values (`1e400`, `.inf`) are the schema's to refuse (they are not numbers a job can use).
 */

/** An integer literal as YAML 1.2's core schema and JSON read one (decimal; YAML also 0o octal, 0x hex). */
const INT_LITERAL = /^[-+]?(?:[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$/;
/** A decimal literal with a fraction or an exponent (JSON's, and YAML's core schema's). */
const FLOAT_LITERAL = /^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$/;

/** The significant digits of a decimal literal or of `String(number)`: no sign, point, exponent, or leading/trailing zeros. */
function significantDigits(text: string): string {
  const mantissa = text.split(/[eE]/)[0]!.replace(/^[-+]/, '').replace('.', '');
  return mantissa.replace(/^0+/, '').replace(/0+$/, '');
}

/**
 * Whether parsing the number literal `source` into `value` changed it silently (see the module docs). `source` is
 * the literal as written; anything that is not a number literal (a quoted string, `.nan`) is never refused here.
 */
export function numberLiteralChanged(source: string, value: number): boolean {
  // Nearer to 0 than a double can be (1e-400): read as 0, which the literal is not.
  if (value === 0) return FLOAT_LITERAL.test(source) && significantDigits(source) !== '';
  if (!Number.isFinite(value) || Number.isSafeInteger(value) || Math.abs(value) <= Number.MAX_SAFE_INTEGER) return false;
  if (INT_LITERAL.test(source)) return true;
  if (!FLOAT_LITERAL.test(source)) return false;
  return significantDigits(source) !== significantDigits(String(value));
}

/** The reason given for a refused literal (the value is not shown: it may be a secret; its position finds it). */
export const CHANGED_NUMBER_REASON = `this number is outside ±${Number.MAX_SAFE_INTEGER} (2^53−1) and has more digits than a JavaScript number keeps: it would be stored as another number`;

/** The reason given for a literal that would read as 0 (`1e-400`). */
export const UNDERFLOW_NUMBER_REASON = 'this number is nearer to 0 than a JavaScript number can be: it would be stored as 0';

/** The reason for a refused literal whose parsed value is `value` ({@link numberLiteralChanged}). */
export function changedNumberReason(value: number): string {
  return value === 0 ? UNDERFLOW_NUMBER_REASON : CHANGED_NUMBER_REASON;
}
