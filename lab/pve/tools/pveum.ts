import {
  BUILTIN_ROLES,
  ROLEID_RE,
  TOKENID_RE,
  USERID_RE,
  newTokenSecret,
  readTokenSecrets,
  readUserCfg,
  splitPrivList,
  verifyPrivs,
  writeTokenSecrets,
  writeUserCfg,
  type UserCfg,
} from "../access";
import { readToolFaults, withPveLock } from "../state";
import {
  CliExit,
  boxTable,
  die,
  out,
  paramError,
  parseArgs,
  printFormatted,
  runTool,
  toolContext,
  type ToolContext,
} from "./common";

/**
 * Simulated `pveum` (pve-access-control 9): user add/list/delete, user token add/list/remove,
 * role add/modify/list/delete, acl modify/list (also `aclmod`). Errors read like the real ones:
 * the API handler's message wrapped by the config lock (`create role failed: …`), exit 255.
 */

const USAGE = {
  userAdd: "pveum user add <userid> [OPTIONS]",
  userDelete: "pveum user delete <userid>",
  tokenAdd: "pveum user token add <userid> <tokenid> [OPTIONS] [FORMAT_OPTIONS]",
  tokenRemove: "pveum user token remove <userid> <tokenid>",
  tokenList: "pveum user token list <userid> [FORMAT_OPTIONS]",
  roleAdd: "pveum role add <roleid> [OPTIONS]",
  roleModify: "pveum role modify <roleid> [OPTIONS]",
  roleDelete: "pveum role delete <roleid>",
  aclModify: "pveum acl modify <path> --roles <string> [OPTIONS]",
  list: "pveum user list  [OPTIONS] [FORMAT_OPTIONS]",
};

const FORMAT = {
  "output-format": "string",
  noborder: "boolean",
  noheader: "boolean",
  "human-readable": "boolean",
} as const;

const REALMS = new Set(["pam", "pve"]);

function main(): void {
  const ctx = toolContext("pveum");
  if (readToolFaults(ctx.root).clusterFsDown) {
    // What pveum prints with pve-cluster stopped: the IPC to pmxcfs is refused three times.
    throw new CliExit(
      255,
      "ipcc_send_rec[1] failed: Connection refused\nipcc_send_rec[2] failed: Connection refused\n" +
        "ipcc_send_rec[3] failed: Connection refused\nUnable to load access control list: Connection refused\n",
    );
  }
  const argv = process.argv.slice(2);
  const [a, b, c] = argv;
  if (a === "user" && b === "token") return token(ctx, c, argv.slice(3));
  if (a === "user") return user(ctx, b, argv.slice(2));
  if (a === "role") return role(ctx, b, argv.slice(2));
  if (a === "acl") return acl(ctx, b, argv.slice(2));
  if (a === "aclmod") return acl(ctx, "modify", argv.slice(1));
  if (a === "useradd") return user(ctx, "add", argv.slice(1));
  if (a === "roleadd") return role(ctx, "add", argv.slice(1));
  if (a === undefined || a === "help") {
    out(`USAGE: pveum <COMMAND> [ARGS] [OPTIONS]\n\n${Object.values(USAGE).join("\n")}\n`);
    return;
  }
  throw new CliExit(255, `unknown command 'pveum ${argv.join(" ")}'\n`);
}

/** Runs a config change under the lock; errors get the handler's prefix, like lock_user_config. */
function change(ctx: ToolContext, what: string, fn: (cfg: UserCfg) => void): void {
  withPveLock(ctx.root, () => {
    const cfg = readUserCfg(ctx.root);
    try {
      fn(cfg);
    } catch (error) {
      if (error instanceof CliExit) throw error;
      die(`${what}: ${(error as Error).message}`);
    }
    writeUserCfg(ctx.root, cfg);
  });
}

function user(ctx: ToolContext, sub: string | undefined, argv: string[]): void {
  switch (sub) {
    case "add": {
      const args = parseArgs(argv, {
        options: {
          comment: "string",
          email: "string",
          enable: "boolean",
          expire: "string",
          firstname: "string",
          lastname: "string",
          groups: "string",
          keys: "string",
          password: "string",
        },
        usage: USAGE.userAdd,
      });
      const userid = args.positional[0];
      if (userid === undefined)
        throw new CliExit(255, `400 not enough arguments\n${USAGE.userAdd}\n`);
      if (!USERID_RE.test(userid)) {
        paramError(
          { userid: "invalid format - value does not look like a valid user ID" },
          USAGE.userAdd,
        );
      }
      change(ctx, "create user failed", (cfg) => {
        const realm = userid.split("@")[1]!;
        if (!REALMS.has(realm)) throw new Error(`domain '${realm}' does not exist`);
        if (cfg.users.some((u) => u.userid === userid))
          throw new Error(`user '${userid}' already exists`);
        cfg.users.push({
          userid,
          enable: args.options.get("enable") !== "0",
          expire: Number(args.options.get("expire") ?? 0),
          firstname: args.options.get("firstname") ?? "",
          lastname: args.options.get("lastname") ?? "",
          email: args.options.get("email") ?? "",
          comment: args.options.get("comment") ?? "",
        });
      });
      return;
    }
    case "delete": {
      const userid = argv[0];
      if (userid === undefined)
        throw new CliExit(255, `400 not enough arguments\n${USAGE.userDelete}\n`);
      change(ctx, "delete user failed", (cfg) => {
        if (!cfg.users.some((u) => u.userid === userid))
          throw new Error(`user '${userid}' does not exist`);
        cfg.users = cfg.users.filter((u) => u.userid !== userid);
        cfg.tokens = cfg.tokens.filter((t) => !t.id.startsWith(`${userid}!`));
        for (const a of cfg.acls)
          a.ugids = a.ugids.filter((g) => g !== userid && !g.startsWith(`${userid}!`));
        cfg.acls = cfg.acls.filter((a) => a.ugids.length > 0);
      });
      return;
    }
    case "list": {
      const args = parseArgs(argv, {
        options: { enabled: "boolean", full: "boolean", ...FORMAT },
        usage: USAGE.list,
      });
      const cfg = readUserCfg(ctx.root);
      const data = cfg.users.map((u) => ({
        userid: u.userid,
        enable: u.enable ? 1 : 0,
        expire: u.expire,
        ...(u.comment ? { comment: u.comment } : {}),
        ...(u.email ? { email: u.email } : {}),
        "realm-type": u.userid.split("@")[1],
        tokens: cfg.tokens
          .filter((t) => t.id.startsWith(`${u.userid}!`))
          .map((t) => ({
            tokenid: t.id.split("!")[1],
            privsep: t.privsep ? 1 : 0,
            expire: t.expire,
          })),
      }));
      printFormatted(args.options.get("output-format"), data, () =>
        boxTable(
          [
            "userid",
            "comment",
            "email",
            "enable",
            "expire",
            "firstname",
            "groups",
            "keys",
            "lastname",
            "realm-type",
            "tfa-locked-until",
            "totp-locked",
          ],
          cfg.users.map((u) => [
            u.userid,
            u.comment,
            u.email,
            u.enable ? "1" : "0",
            String(u.expire),
            u.firstname,
            "",
            "",
            u.lastname,
            u.userid.split("@")[1] ?? "",
            "",
            "",
          ]),
        ),
      );
      return;
    }
    default:
      throw new CliExit(255, `unknown command 'pveum user ${sub ?? ""}'\n`);
  }
}

function token(ctx: ToolContext, sub: string | undefined, argv: string[]): void {
  switch (sub) {
    case "add": {
      const args = parseArgs(argv, {
        options: { comment: "string", expire: "string", privsep: "boolean", ...FORMAT },
        usage: USAGE.tokenAdd,
      });
      const [userid, tokenid] = args.positional;
      if (userid === undefined || tokenid === undefined) {
        throw new CliExit(255, `400 not enough arguments\n${USAGE.tokenAdd}\n`);
      }
      if (!TOKENID_RE.test(tokenid)) {
        paramError(
          { tokenid: "invalid format - value does not match the regex pattern" },
          USAGE.tokenAdd,
        );
      }
      const id = `${userid}!${tokenid}`;
      const privsep = args.options.get("privsep") !== "0";
      const secret = newTokenSecret();
      withPveLock(ctx.root, () => {
        const cfg = readUserCfg(ctx.root);
        if (!cfg.users.some((u) => u.userid === userid)) die(`no such user ('${userid}')`);
        if (cfg.tokens.some((t) => t.id === id)) die("Token already exists.");
        cfg.tokens.push({
          id,
          expire: Number(args.options.get("expire") ?? 0),
          privsep,
          comment: args.options.get("comment") ?? "",
        });
        const secrets = readTokenSecrets(ctx.root);
        secrets.set(id, secret);
        writeTokenSecrets(ctx.root, secrets);
        writeUserCfg(ctx.root, cfg);
      });
      const data = { "full-tokenid": id, info: { privsep: privsep ? 1 : 0 }, value: secret };
      printFormatted(args.options.get("output-format"), data, () =>
        boxTable(
          ["key", "value"],
          [
            ["full-tokenid", id],
            ["info", JSON.stringify({ privsep: privsep ? "1" : "0" })],
            ["value", secret],
          ],
        ),
      );
      return;
    }
    case "remove":
    case "delete": {
      const [userid, tokenid] = argv;
      if (userid === undefined || tokenid === undefined) {
        throw new CliExit(255, `400 not enough arguments\n${USAGE.tokenRemove}\n`);
      }
      const id = `${userid}!${tokenid}`;
      withPveLock(ctx.root, () => {
        const cfg = readUserCfg(ctx.root);
        if (!cfg.tokens.some((t) => t.id === id))
          die(`no such token '${tokenid}' for user '${userid}'`);
        cfg.tokens = cfg.tokens.filter((t) => t.id !== id);
        for (const a of cfg.acls) a.ugids = a.ugids.filter((g) => g !== id);
        cfg.acls = cfg.acls.filter((a) => a.ugids.length > 0);
        const secrets = readTokenSecrets(ctx.root);
        secrets.delete(id);
        writeTokenSecrets(ctx.root, secrets);
        writeUserCfg(ctx.root, cfg);
      });
      return;
    }
    case "list": {
      const args = parseArgs(argv, { options: { ...FORMAT }, usage: USAGE.tokenList });
      const userid = args.positional[0];
      if (userid === undefined)
        throw new CliExit(255, `400 not enough arguments\n${USAGE.tokenList}\n`);
      const cfg = readUserCfg(ctx.root);
      if (!cfg.users.some((u) => u.userid === userid)) die(`no such user ('${userid}')`);
      const tokens = cfg.tokens.filter((t) => t.id.startsWith(`${userid}!`));
      const data = tokens.map((t) => ({
        tokenid: t.id.split("!")[1],
        privsep: t.privsep ? 1 : 0,
        expire: t.expire,
        ...(t.comment ? { comment: t.comment } : {}),
      }));
      printFormatted(args.options.get("output-format"), data, () =>
        boxTable(
          ["tokenid", "comment", "expire", "privsep"],
          tokens.map((t) => [
            t.id.split("!")[1] ?? "",
            t.comment,
            String(t.expire),
            t.privsep ? "1" : "0",
          ]),
        ),
      );
      return;
    }
    default:
      throw new CliExit(255, `unknown command 'pveum user token ${sub ?? ""}'\n`);
  }
}

function role(ctx: ToolContext, sub: string | undefined, argv: string[]): void {
  switch (sub) {
    case "add":
    case "modify": {
      const usage = sub === "add" ? USAGE.roleAdd : USAGE.roleModify;
      const args = parseArgs(argv, { options: { privs: "string", append: "boolean" }, usage });
      const roleid = args.positional[0];
      if (roleid === undefined) throw new CliExit(255, `400 not enough arguments\n${usage}\n`);
      if (!ROLEID_RE.test(roleid)) {
        paramError({ roleid: "invalid format - value does not look like a valid role ID" }, usage);
      }
      const privs = splitPrivList(args.options.get("privs") ?? "");
      change(ctx, sub === "add" ? "create role failed" : "update role failed", (cfg) => {
        if (BUILTIN_ROLES[roleid]) throw new Error(`cannot modify role '${roleid}' - builtin role`);
        const existing = cfg.roles.get(roleid);
        if (sub === "add" && existing) throw new Error(`role '${roleid}' already exists`);
        if (sub === "modify" && !existing) throw new Error(`role '${roleid}' does not exist`);
        verifyPrivs(privs);
        const next = args.options.get("append") === "1" ? [...(existing ?? []), ...privs] : privs;
        cfg.roles.set(roleid, [...new Set(next)].sort());
      });
      return;
    }
    case "delete": {
      const roleid = argv[0];
      if (roleid === undefined)
        throw new CliExit(255, `400 not enough arguments\n${USAGE.roleDelete}\n`);
      change(ctx, "delete role failed", (cfg) => {
        if (!cfg.roles.has(roleid)) throw new Error(`role '${roleid}' does not exist`);
        cfg.roles.delete(roleid);
        for (const a of cfg.acls) a.roles = a.roles.filter((r) => r !== roleid);
        cfg.acls = cfg.acls.filter((a) => a.roles.length > 0);
      });
      return;
    }
    case "list": {
      const args = parseArgs(argv, {
        options: { ...FORMAT },
        usage: "pveum role list  [FORMAT_OPTIONS]",
      });
      const cfg = readUserCfg(ctx.root);
      const all = [
        ...Object.entries(BUILTIN_ROLES).map(([id, privs]) => ({ roleid: id, privs, special: 1 })),
        ...[...cfg.roles].map(([id, privs]) => ({ roleid: id, privs, special: 0 })),
      ].sort((x, y) => x.roleid.localeCompare(y.roleid));
      printFormatted(
        args.options.get("output-format"),
        all.map((r) => ({ roleid: r.roleid, privs: r.privs.join(","), special: r.special })),
        () =>
          boxTable(
            ["roleid", "privs", "special"],
            all.map((r) => [r.roleid, r.privs.join(","), String(r.special)]),
          ),
      );
      return;
    }
    default:
      throw new CliExit(255, `unknown command 'pveum role ${sub ?? ""}'\n`);
  }
}

function acl(ctx: ToolContext, sub: string | undefined, argv: string[]): void {
  switch (sub) {
    case "modify":
    case "delete": {
      const args = parseArgs(argv, {
        options: {
          roles: "string",
          users: "string",
          groups: "string",
          tokens: "string",
          propagate: "boolean",
          delete: "boolean",
        },
        usage: USAGE.aclModify,
      });
      const aclPath = args.positional[0];
      const roles = splitPrivList(args.options.get("roles") ?? "");
      if (aclPath === undefined || roles.length === 0) {
        throw new CliExit(255, `400 not enough arguments\n${USAGE.aclModify}\n`);
      }
      const remove = sub === "delete" || args.options.get("delete") === "1";
      const propagate = args.options.get("propagate") !== "0";
      const users = splitPrivList(args.options.get("users") ?? "");
      const tokens = splitPrivList(args.options.get("tokens") ?? "");
      const groups = splitPrivList(args.options.get("groups") ?? "").map((g) => `@${g}`);
      if (!/^\/[\w/.-]*$/.test(aclPath)) paramError({ path: "invalid ACL path" }, USAGE.aclModify);
      change(ctx, "ACL update failed", (cfg) => {
        for (const r of roles) {
          if (!BUILTIN_ROLES[r] && !cfg.roles.has(r)) throw new Error(`role '${r}' does not exist`);
        }
        for (const u of users) {
          if (!cfg.users.some((x) => x.userid === u)) throw new Error(`user '${u}' does not exist`);
        }
        for (const t of tokens) {
          if (!cfg.tokens.some((x) => x.id === t)) throw new Error(`token '${t}' does not exist`);
        }
        for (const ugid of [...users, ...tokens, ...groups]) {
          for (const r of roles) {
            for (const a of cfg.acls) {
              if (a.path === aclPath && a.roles.includes(r))
                a.ugids = a.ugids.filter((g) => g !== ugid);
            }
            if (!remove) {
              const line = cfg.acls.find(
                (a) =>
                  a.path === aclPath &&
                  a.propagate === propagate &&
                  a.roles.length === 1 &&
                  a.roles[0] === r,
              );
              if (line) line.ugids.push(ugid);
              else cfg.acls.push({ propagate, path: aclPath, ugids: [ugid], roles: [r] });
            }
          }
        }
        cfg.acls = cfg.acls.filter((a) => a.ugids.length > 0);
      });
      return;
    }
    case "list": {
      const args = parseArgs(argv, {
        options: { ...FORMAT },
        usage: "pveum acl list  [FORMAT_OPTIONS]",
      });
      const cfg = readUserCfg(ctx.root);
      const rows = cfg.acls.flatMap((a) =>
        a.ugids.flatMap((ugid) =>
          a.roles.map((r) => ({
            path: a.path,
            type: ugid.startsWith("@") ? "group" : ugid.includes("!") ? "token" : "user",
            ugid: ugid.replace(/^@/, ""),
            roleid: r,
            propagate: a.propagate ? 1 : 0,
          })),
        ),
      );
      printFormatted(args.options.get("output-format"), rows, () =>
        boxTable(
          ["path", "roleid", "type", "ugid", "propagate"],
          rows.map((r) => [r.path, r.roleid, r.type, r.ugid, String(r.propagate)]),
        ),
      );
      return;
    }
    default:
      throw new CliExit(255, `unknown command 'pveum acl ${sub ?? ""}'\n`);
  }
}

runTool(main);
