//! The one script of `report.html`: the ops table sorts by a column when its header is
//! clicked (largest first, again for smallest first; `#` back to program order), and a
//! page opened as `report.html#sort=exposed` starts sorted. The page stays
//! self-contained: the script is inline, and the Content-Security-Policy allows it by its
//! hash ([`SORT_SCRIPT_HASH`]) and nothing else.
//!
//! Sortable cells carry their number in `data-v`; rows keep their program position in
//! `data-i` to break ties.

/// The script, exactly as it stands between `<script>` and `</script>`.
pub(super) const SORT_SCRIPT: &str = "\
(function(){\
var t=document.querySelector('table.ops');if(!t)return;\
var b=t.tBodies[0],hs=t.querySelectorAll('th[data-sort]');\
for(var i=0;i<b.rows.length;i++)b.rows[i].setAttribute('data-i',i);\
function val(r,c){var x=parseFloat(r.cells[c].getAttribute('data-v'));return isNaN(x)?-Infinity:x;}\
function sort(k,desc){\
var h=t.querySelector('th[data-sort=\"'+k+'\"]');if(!h)return;\
var c=h.cellIndex,rs=Array.prototype.slice.call(b.rows);\
rs.sort(function(x,y){var d=desc?val(y,c)-val(x,c):val(x,c)-val(y,c);\
return d||x.getAttribute('data-i')-y.getAttribute('data-i');});\
for(var j=0;j<rs.length;j++)b.appendChild(rs[j]);\
for(var j=0;j<hs.length;j++)hs[j].removeAttribute('aria-sort');\
h.setAttribute('aria-sort',desc?'descending':'ascending');}\
for(var i=0;i<hs.length;i++)hs[i].addEventListener('click',function(){\
var k=this.getAttribute('data-sort'),s=this.getAttribute('aria-sort'),\
first=this.getAttribute('data-first')!=='asc';\
sort(k,s?s==='ascending':first);});\
var m=/(?:^|[#&])sort=([a-z_]+)(?:-(asc|desc))?/.exec(location.hash);\
if(m){var h=t.querySelector('th[data-sort=\"'+m[1]+'\"]');\
if(h)sort(m[1],m[2]?m[2]==='desc':h.getAttribute('data-first')!=='asc');}\
})();";

/// The CSP source that allows [`SORT_SCRIPT`]: its SHA-256, base64 (checked by a test).
pub(super) const SORT_SCRIPT_HASH: &str = "sha256-AeclGEcU2moixL+l9O2kZ9IZY/lqBfIzG78BzRQ1JZo=";

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use sha2::Digest as _;

    #[test]
    fn the_policy_allows_the_script_by_its_hash() {
        let digest = sha2::Sha256::digest(SORT_SCRIPT.as_bytes());
        let b64 = base64::engine::general_purpose::STANDARD.encode(digest);
        assert_eq!(SORT_SCRIPT_HASH, format!("sha256-{b64}"));
    }
}
