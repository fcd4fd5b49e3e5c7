import json, numpy as np, os
os.environ["TF_CPP_MIN_LOG_LEVEL"]="2"
import tensorflow as tf, kbert
tf.config.threading.set_intra_op_parallelism_threads(1)
D="/tmp/lda"; tok=kbert.load_tokenizer(D+"/minilm"); enc=kbert.load_encoder(D+"/minilm")
def ids(texts):
    r=tok(texts); return [ [w for word in doc for w in word] for doc in r.to_list()]
out={}
for split in ("train","eval"):
    docs=[json.loads(l) for l in open(f"{D}/{split}.jsonl")]; sig=[json.loads(l) for l in open(f"{D}/{split}-signal.jsonl")]
    dids=ids([d["text"] for d in docs]); sids=ids([s["text"] for s in sig])
    wins=[];owner=[];starts=[];spans=[]
    for i,(d,s) in enumerate(zip(dids,sids)):
        pos=next(p for p in range(len(d)-len(s)+1) if d[p:p+len(s)]==s); spans.append((pos,pos+len(s)))
        st=0
        while True:
            wins.append([101]+d[st:st+126]+[102]); owner.append(i); starts.append(st)
            if st+126>=len(d): break
            st+=64
    X=np.zeros((len(wins),128),np.int32)
    for k,w in enumerate(wins): X[k,:len(w)]=w
    seq=[]
    for b in range(0,len(X),64):
        x=X[b:b+64]; o=enc({"input_word_ids":x,"input_mask":(x>0).astype("int32"),"input_type_ids":np.zeros_like(x)},training=False)
        seq.append(o["sequence_output"].numpy().astype(np.float16))
    S=np.zeros((len(sids),128),np.int32)
    for k,s in enumerate(sids): S[k,:min(len(s),126)+2]=[101]+s[:126]+[102]
    so=[]
    for b in range(0,len(S),64):
        x=S[b:b+64]; o=enc({"input_word_ids":x,"input_mask":(x>0).astype("int32"),"input_type_ids":np.zeros_like(x)},training=False)
        h=o["sequence_output"].numpy(); m=(x>0)[...,None]; so.append((h*m).sum(1)/m.sum(1))
    np.savez(f"/tmp/probe/{split}.npz",X=X,seq=np.concatenate(seq),owner=np.array(owner),starts=np.array(starts),
             spans=np.array(spans),labels=np.array([int(d["label"]) for d in docs]),sent=np.concatenate(so))
    print(split,len(wins),flush=True)
