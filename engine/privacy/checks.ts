// Checksums and number plans: Luhn and card brands (IIN ranges), ABA routing, US SSN ranges, NANP phone numbers, IBAN.

export function luhnValid(d: string): boolean {
  let sum = 0;
  for (let i = d.length - 1, k = 0; i >= 0; i--, k++) {
    let x = d.charCodeAt(i) - 48;
    if (k % 2 === 1) {
      x *= 2;
      if (x > 9) x -= 9;
    }
    sum += x;
  }
  return d.length > 0 && sum % 10 === 0;
}

/** Card brand for a Luhn-valid number of a length that brand issues, or null (major networks' IIN ranges). */
export function cardBrand(d: string): string | null {
  const n = d.length;
  const p2 = Number(d.slice(0, 2));
  const p3 = Number(d.slice(0, 3));
  const p4 = Number(d.slice(0, 4));
  const p6 = Number(d.slice(0, 6));
  if (d[0] === '4' && (n === 13 || n === 16 || n === 19)) return 'visa';
  if (((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) && n === 16) return 'mastercard';
  if ((p2 === 34 || p2 === 37) && n === 15) return 'amex';
  if ((p4 === 6011 || p2 === 65 || (p3 >= 644 && p3 <= 649) || (p6 >= 622126 && p6 <= 622925)) && n >= 16 && n <= 19) return 'discover';
  if (p4 >= 3528 && p4 <= 3589 && n >= 16 && n <= 19) return 'jcb';
  if (((p3 >= 300 && p3 <= 305) || p2 === 36 || p2 === 38 || p2 === 39) && n >= 14 && n <= 19) return 'diners';
  if (p2 === 62 && n >= 16 && n <= 19) return 'unionpay';
  if (p4 >= 2200 && p4 <= 2204 && n >= 16 && n <= 19) return 'mir';
  if ((p2 === 50 || (p2 >= 56 && p2 <= 69)) && n >= 13 && n <= 19) return 'maestro';
  if ((p2 === 81 || p2 === 82 || p3 === 508 || p2 === 60) && n === 16) return 'rupay';
  return null;
}

/** ABA routing number: 9 digits, 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) ≡ 0 (mod 10), valid Federal Reserve prefix. */
export function abaValid(d: string): boolean {
  if (!/^[0-9]{9}$/.test(d)) return false;
  const x = [...d].map(Number);
  const sum = 3 * (x[0]! + x[3]! + x[6]!) + 7 * (x[1]! + x[4]! + x[7]!) + (x[2]! + x[5]! + x[8]!);
  const prefix = Number(d.slice(0, 2));
  const prefixOk = prefix <= 12 || (prefix >= 21 && prefix <= 32) || (prefix >= 61 && prefix <= 72) || prefix === 80;
  return sum % 10 === 0 && prefixOk && d !== '000000000';
}

/** US SSN ranges: area not 000, 666 or 900-999; group not 00; serial not 0000. */
export function ssnValid(d: string): boolean {
  if (!/^[0-9]{9}$/.test(d)) return false;
  const area = Number(d.slice(0, 3));
  return area !== 0 && area !== 666 && area < 900 && d.slice(3, 5) !== '00' && d.slice(5) !== '0000';
}

/** NANP ten-digit number: area code and exchange start 2-9, area code not N11. */
export function nanpValid(d: string): boolean {
  if (!/^[2-9][0-9]{2}[2-9][0-9]{6}$/.test(d)) return false;
  return !(d[1] === '1' && d[2] === '1');
}

/** IBAN mod-97 check on the compact form (letters and digits, no spaces). */
export function ibanValid(s: string): boolean {
  const c = s.toUpperCase();
  if (!/^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$/.test(c)) return false;
  const moved = c.slice(4) + c.slice(0, 4);
  let rem = 0;
  for (const ch of moved) {
    const v = ch >= 'A' ? String(ch.charCodeAt(0) - 55) : ch;
    for (const digit of v) rem = (rem * 10 + Number(digit)) % 97;
  }
  return rem === 1;
}
