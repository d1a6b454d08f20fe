/**
 * The Luhn (mod 10) check used by payment card numbers (ISO/IEC 7812-1).
 * `digits` must be ASCII digits only; anything else, or fewer than two digits, is not Luhn-valid.
 */
export function luhn(digits: string): boolean {
  if (digits.length < 2) return false;
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}
