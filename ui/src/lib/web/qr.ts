// A QR code as one SVG path (drawn by the page as markup, never as HTML
// text): qrcode-generator computes the modules; nothing else is needed.
// Why that package: no dependencies, MIT, one small file, a stable API for
// a decade, and it hands out the module matrix (isDark) so that the page
// draws it itself under the CSP.
import qrcode from "qrcode-generator";

export interface QrPath {
  /** Modules per side, without the quiet zone. */
  size: number;
  /** The dark modules, one unit square each, offset by the quiet zone. */
  d: string;
  /** Modules per side with the quiet zone (4 on each side). */
  box: number;
}

export const QUIET = 4;

/** The modules of `text`'s QR code (error correction M, smallest version). */
export function qrMatrix(text: string): boolean[][] {
  const qr = qrcode(0, "M");
  qr.addData(text, "Byte");
  qr.make();
  const n = qr.getModuleCount();
  return Array.from({ length: n }, (_, r) => Array.from({ length: n }, (_, c) => qr.isDark(r, c)));
}

export function qrPath(text: string): QrPath {
  const m = qrMatrix(text);
  const parts: string[] = [];
  m.forEach((row, r) =>
    row.forEach((dark, c) => {
      if (dark) parts.push(`M${c + QUIET} ${r + QUIET}h1v1h-1z`);
    }),
  );
  return { size: m.length, d: parts.join(""), box: m.length + 2 * QUIET };
}

/** What a phone's camera should open: the engine's page, with the code in
 * the fragment (it fills the pairing screen in; a fragment is never sent to
 * a server). */
export function pairingLink(url: string, code: string): string {
  const base = url.split("#")[0] ?? url;
  return `${base}#pair=${encodeURIComponent(code)}`;
}
