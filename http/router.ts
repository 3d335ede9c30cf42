// A small segment-trie router with `{name}` path parameters. Static segments win over
// parameters, so `/v1/calls/batch` is never read as `/v1/calls/{call_id}`. Parameters
// are URL-decoded (`%2B14155550123` is `+14155550123`); a bad escape leaves the raw text.

interface Node<T> {
  statics: Map<string, Node<T>>;
  param: { name: string; node: Node<T> } | null;
  handlers: Map<string, T>;
}

export type Match<T> =
  | { kind: 'found'; value: T; params: Record<string, string>; pattern: string }
  | { kind: 'method_not_allowed'; allowed: string[]; pattern: string }
  | { kind: 'not_found' };

const newNode = <T>(): Node<T> => ({ statics: new Map(), param: null, handlers: new Map() });

function splitPath(path: string): string[] {
  const parts = path.split('/');
  // Leading slash gives an empty first part; a trailing slash is tolerated.
  const out: string[] = [];
  for (const p of parts) if (p !== '') out.push(p);
  return out;
}

function decode(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export class Router<T> {
  private readonly root: Node<T> = newNode<T>();
  private readonly patterns = new Map<Node<T>, string>();

  add(method: string, pattern: string, value: T): void {
    let node = this.root;
    for (const seg of splitPath(pattern)) {
      const param = /^\{(\w+)\}$/.exec(seg);
      if (param) {
        const name = param[1]!;
        if (node.param && node.param.name !== name) {
          throw new Error(`Route ${pattern}: parameter {${name}} clashes with {${node.param.name}}`);
        }
        node.param ??= { name, node: newNode<T>() };
        node = node.param.node;
      } else {
        let next = node.statics.get(seg);
        if (!next) {
          next = newNode<T>();
          node.statics.set(seg, next);
        }
        node = next;
      }
    }
    if (node.handlers.has(method)) throw new Error(`Route ${method} ${pattern} registered twice`);
    node.handlers.set(method, value);
    this.patterns.set(node, pattern);
  }

  match(method: string, path: string): Match<T> {
    const params: Record<string, string> = {};
    const node = this.walk(this.root, splitPath(path), 0, params);
    if (!node || node.handlers.size === 0) return { kind: 'not_found' };
    const pattern = this.patterns.get(node)!;
    const value = node.handlers.get(method) ?? (method === 'HEAD' ? node.handlers.get('GET') : undefined);
    if (value === undefined) return { kind: 'method_not_allowed', allowed: [...node.handlers.keys()], pattern };
    return { kind: 'found', value, params, pattern };
  }

  private walk(node: Node<T>, segs: string[], i: number, params: Record<string, string>): Node<T> | null {
    if (i === segs.length) return node;
    const seg = segs[i]!;
    const stat = node.statics.get(seg);
    if (stat) {
      const found = this.walk(stat, segs, i + 1, params);
      if (found && found.handlers.size > 0) return found;
    }
    if (node.param) {
      const found = this.walk(node.param.node, segs, i + 1, params);
      if (found && found.handlers.size > 0) {
        params[node.param.name] = decode(seg);
        return found;
      }
    }
    return null;
  }
}
