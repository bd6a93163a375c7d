// The QR code a phone scans must read back as the pairing link: decoded here
// by a real QR reader (jsQR) from the pixels of the drawn modules.
import { describe, expect, it } from "vitest";
import jsQR from "jsqr";
import { pairingLink, qrMatrix, qrPath, QUIET } from "./qr";
import { codeFromUrl } from "./pairing";

/** The modules drawn as RGBA pixels, `scale` px each, with the quiet zone. */
function pixels(m: boolean[][], scale = 4): { data: Uint8ClampedArray; side: number } {
  const side = (m.length + 2 * QUIET) * scale;
  const data = new Uint8ClampedArray(side * side * 4).fill(255);
  m.forEach((row, r) =>
    row.forEach((dark, c) => {
      if (!dark) return;
      for (let y = 0; y < scale; y++)
        for (let x = 0; x < scale; x++) {
          const i = (((r + QUIET) * scale + y) * side + (c + QUIET) * scale + x) * 4;
          data[i] = data[i + 1] = data[i + 2] = 0;
        }
    }),
  );
  return { data, side };
}

describe("the pairing QR code", () => {
  it("reads back as the engine's URL with the code in its fragment, which the pairing screen fills in", () => {
    const link = pairingLink("https://box.tailnet.ts.net:8443/", "ABCD-EFGH");
    expect(link).toBe("https://box.tailnet.ts.net:8443/#pair=ABCD-EFGH");
    const { data, side } = pixels(qrMatrix(link));
    const read = jsQR(data, side, side);
    expect(read?.data).toBe(link);
    expect(codeFromUrl(new URL(read!.data).hash)).toBe("ABCD-EFGH");
  });

  it("draws exactly the dark modules, inside the quiet zone", () => {
    const m = qrMatrix("http://127.0.0.1:8765/#pair=WXYZ-2345");
    const p = qrPath("http://127.0.0.1:8765/#pair=WXYZ-2345");
    expect(p.size).toBe(m.length);
    expect(p.box).toBe(m.length + 8);
    expect(p.d.match(/M/g)?.length).toBe(m.flat().filter(Boolean).length);
  });

  it("replaces a fragment the engine's URL already has", () => {
    expect(pairingLink("http://localhost:8765/#old", "K2M3-N4P5")).toBe("http://localhost:8765/#pair=K2M3-N4P5");
  });
});
