// streams console: a chunk's record on click, the lag table refreshed. No framework, no build step.
"use strict";

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;  // textContent only: nothing from a document is parsed as HTML
  if (cls) node.className = cls;
  return node;
}

const SHOWN = ["chunk_id", "strategy", "chunker_version", "amendment_number", "is_latest_version", "position",
  "token_count", "char_start", "char_end", "page_numbers", "section_path", "content_type", "content_hash"];

function showRecord(record) {
  const panel = document.getElementById("record") || document.body.appendChild(Object.assign(el("aside"), {id: "record"}));
  if (!panel.querySelector(".body")) {
    const close = el("button", "×", "close");
    close.type = "button";
    panel.append(close, el("div", undefined, "body"));
  }
  const body = panel.querySelector(".body");
  body.replaceChildren();
  body.append(el("h3", "chunk #" + record.position));
  const list = el("dl");
  for (const key of SHOWN) {
    if (!(key in record)) continue;
    const value = record[key];
    const joined = key === "section_path" ? value.join(" › ") : Array.isArray(value) ? value.join(", ") : String(value);
    list.append(el("dt", key), el("dd", joined));
  }
  if (record.metadata) list.append(el("dt", "metadata"), el("dd", JSON.stringify(record.metadata)));
  body.append(list, el("pre", record.text, "text"));
  panel.dataset.chunk = record.chunk_id;
  panel.hidden = false;
}

function embeddedRecord(node, chunkId) {
  const column = node.closest(".column");
  const script = column && column.querySelector("script.records");
  if (!script) return null;
  return JSON.parse(script.textContent).find((r) => r.chunk_id === chunkId) || null;
}

async function openChunk(node, chunkId) {
  document.querySelectorAll(".seg.active").forEach((s) => s.classList.remove("active"));
  const column = node.closest(".doctext") || document;
  column.querySelectorAll(".seg").forEach((s) => {
    if ((s.dataset.chunks || "").split(" ").includes(chunkId)) s.classList.add("active");
  });
  const record = embeddedRecord(node, chunkId) ||
    await fetch("/api/chunk/" + encodeURIComponent(chunkId)).then((r) => (r.ok ? r.json() : null));
  if (record) showRecord(record);
}

document.addEventListener("click", (event) => {
  const target = event.target;
  if (target.closest("#record .close")) { document.getElementById("record").hidden = true; return; }
  const cut = target.closest(".cut[data-chunk]");
  const seg = target.closest(".seg[data-chunks], table.chunktable[data-chunks]");
  const chunkId = cut ? cut.dataset.chunk : seg && seg.dataset.chunks ? seg.dataset.chunks.split(" ").pop() : null;
  if (chunkId) openChunk(target, chunkId);
});

function refreshLag() {
  const table = document.getElementById("lag");
  if (!table) return;
  fetch(table.dataset.refresh).then((r) => r.json()).then((report) => {
    const rows = report.partitions.map((r) => {
      const tr = el("tr");
      const cells = [r.group, r.topic, r.partition, r.committed, r.end, r.lag,
        r.produced_per_s ?? "–", r.consumed_per_s ?? "–"];
      cells.forEach((value, i) => tr.append(el("td", String(value), i >= 2 ? "num" : undefined)));
      return tr;
    });
    table.tBodies[0].replaceChildren(...rows);
    document.getElementById("total-lag").textContent = String(report.total_lag);
    table.dataset.refreshed = String(Date.now());
  }).catch(() => {});
}

window.addEventListener("DOMContentLoaded", () => {
  if (document.getElementById("lag")) setInterval(refreshLag, 3000);
  if (location.hash.length > 1) {
    const target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (target) { target.scrollIntoView({block: "center"}); openChunk(target, target.dataset.chunk); }
  }
});
