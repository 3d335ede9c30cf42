// A small reader of TwiML documents for the carrier A simulator (and tests that check
// the service's TwiML answers): elements, attributes and text, entities decoded. Not a
// general XML parser: no CDATA, no namespaces; what is not well-formed TwiML is null.

/** An element of a TwiML document. */
export interface TwimlNode {
  name: string;
  attrs: Record<string, string>;
  children: TwimlNode[];
  text: string;
}

// Declarations and comments | end tag | start or empty tag with attributes | text | a stray '<'.
const XML_TOKEN = /<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<\/\s*([\w:.-]+)\s*>|<([\w:.-]+)((?:\s+[\w:.-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>|([^<]+)|(<)/g;
const XML_ATTR = /([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

/** The verbs (children of `<Response>`) of a TwiML document, or null when it is not well-formed TwiML. */
export function readTwiml(xml: string): TwimlNode[] | null {
  const root: TwimlNode = { name: '#document', attrs: {}, children: [], text: '' };
  const stack = [root];
  for (const m of xml.matchAll(XML_TOKEN)) {
    const top = stack[stack.length - 1]!;
    if (m[1] !== undefined) {
      if (stack.length === 1 || top.name !== m[1]) return null;
      stack.pop();
    } else if (m[2] !== undefined) {
      const attrs: Record<string, string> = {};
      for (const a of (m[3] ?? '').matchAll(XML_ATTR)) attrs[a[1]!] = unescapeXml(a[2] ?? a[3] ?? '');
      const node: TwimlNode = { name: m[2], attrs, children: [], text: '' };
      top.children.push(node);
      if (m[4] !== '/') stack.push(node);
    } else if (m[5] !== undefined) {
      if (stack.length === 1 && m[5].trim() !== '') return null;
      top.text += unescapeXml(m[5]);
    } else if (m[6] !== undefined) {
      return null;
    }
  }
  const response = root.children[0];
  if (stack.length !== 1 || root.children.length !== 1 || response?.name !== 'Response') return null;
  return response.children;
}

function unescapeXml(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/g, (_, e: string) => {
    if (e[0] === '#') return String.fromCodePoint(e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[e] ?? '';
  });
}
